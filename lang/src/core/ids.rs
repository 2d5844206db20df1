//! Typed ids and id-indexed vectors for the arena IR (docs/architecture.md: never index with a raw usize).

use std::marker::PhantomData;

/// Declares a `Copy` newtype id over `u32`.
#[macro_export]
macro_rules! define_id {
    ($(#[$meta:meta])* $name:ident, $prefix:literal) => {
        $(#[$meta])*
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(pub u32);

        impl $crate::core::ids::Id for $name {
            fn from_index(index: usize) -> Self {
                $name(u32::try_from(index).expect("arena holds fewer than 2^32 entries"))
            }
            fn index(self) -> usize {
                self.0 as usize
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, "{}{}", $prefix, self.0)
            }
        }
    };
}

pub trait Id: Copy {
    fn from_index(index: usize) -> Self;
    fn index(self) -> usize;
}

/// A vector indexed by a typed id.
#[derive(Clone, Debug, PartialEq)]
pub struct IdVec<K: Id, V> {
    items: Vec<V>,
    _key: PhantomData<K>,
}

impl<K: Id, V> Default for IdVec<K, V> {
    fn default() -> Self {
        IdVec {
            items: Vec::new(),
            _key: PhantomData,
        }
    }
}

impl<K: Id, V> IdVec<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn push(&mut self, value: V) -> K {
        let id = K::from_index(self.items.len());
        self.items.push(value);
        id
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub fn contains(&self, id: K) -> bool {
        id.index() < self.items.len()
    }

    pub fn get(&self, id: K) -> Option<&V> {
        self.items.get(id.index())
    }

    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.items
            .iter()
            .enumerate()
            .map(|(index, value)| (K::from_index(index), value))
    }

    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.items.iter()
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.items.iter_mut()
    }
}

impl<K: Id, V> std::ops::Index<K> for IdVec<K, V> {
    type Output = V;
    fn index(&self, id: K) -> &V {
        &self.items[id.index()]
    }
}

impl<K: Id, V> std::ops::IndexMut<K> for IdVec<K, V> {
    fn index_mut(&mut self, id: K) -> &mut V {
        &mut self.items[id.index()]
    }
}
