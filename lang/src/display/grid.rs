//! Tables as grids with index labels (docs/language.md): `:table`, and the HTML view a notebook
//! shows for 2-D values. A 1-D table is one column; a 2-D table has its outer index on rows and
//! its inner index on columns; a tuple of equally indexed 1-D tables has one column per
//! component. Text is box-drawn with comfy-table (built without
//! terminal detection, so the text never depends on where it is shown); HTML is a plain `<table>`.
//!
//! Large grids are summarised as the REPL summarises values (Note [Summarised tables] in
//! `value.rs`): past `SUMMARY_THRESHOLD` cells, long axes keep their first and last
//! `SUMMARY_EDGE` items around a `...` row or column.

use comfy_table::presets::UTF8_FULL;
use comfy_table::{CellAlignment, ContentArrangement, Table};

use super::value::{format_scalar, SUMMARY_EDGE, SUMMARY_THRESHOLD};
use super::DisplayValue;

/// A grid of formatted cells with row and column labels. `None` marks a `...` row or column.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    pub columns: Vec<Option<String>>,
    pub rows: Vec<(Option<String>, Vec<String>)>,
}

/// Which items of an axis of length `len` are shown: all, or the ends around a gap (`None`).
fn shown(len: usize, summarise: bool) -> Vec<Option<usize>> {
    if summarise && len > 2 * SUMMARY_EDGE {
        (0..SUMMARY_EDGE)
            .map(Some)
            .chain(std::iter::once(None))
            .chain((len - SUMMARY_EDGE..len).map(Some))
            .collect()
    } else {
        (0..len).map(Some).collect()
    }
}

impl Grid {
    /// The grid of a 1-D or 2-D table of scalars, or of a tuple of equally indexed 1-D tables
    /// of scalars; `None` for any other value. With `summarise`, a grid of more than 1000
    /// cells keeps the ends of its long axes.
    pub fn from_value(value: &DisplayValue, summarise: bool) -> Option<Grid> {
        let columns: Vec<&[DisplayValue]> = match value {
            DisplayValue::Table(rows) => match rows.first() {
                Some(DisplayValue::Table(_)) => {
                    // 2-D: rows of equal length; transpose into columns below.
                    let width = table_items(&rows[0])?.len();
                    let row_items: Vec<&[DisplayValue]> =
                        rows.iter().map(table_items).collect::<Option<_>>()?;
                    if row_items
                        .iter()
                        .any(|items| items.len() != width || !all_scalars(items))
                    {
                        return None;
                    }
                    return Some(Grid::build(
                        rows.len(),
                        width,
                        summarise,
                        |row, column| row_items[row][column].clone(),
                        |column| column.to_string(),
                    ));
                }
                _ if all_scalars(rows) => vec![rows.as_slice()],
                _ => return None,
            },
            DisplayValue::Tuple(items) => {
                let columns: Vec<&[DisplayValue]> =
                    items.iter().map(table_items).collect::<Option<_>>()?;
                let len = columns.first()?.len();
                if columns
                    .iter()
                    .any(|column| column.len() != len || !all_scalars(column))
                {
                    return None;
                }
                columns
            }
            DisplayValue::Scalar(_)
            | DisplayValue::Con(..)
            | DisplayValue::Struct(..)
            | DisplayValue::Text(_) => return None,
        };
        let n_rows = columns[0].len();
        let label = |column: usize| {
            if matches!(value, DisplayValue::Tuple(_)) {
                format!(".{column}")
            } else {
                String::new()
            }
        };
        Some(Grid::build(
            n_rows,
            columns.len(),
            summarise,
            |row, column| columns[column][row].clone(),
            label,
        ))
    }

    fn build(
        n_rows: usize,
        n_columns: usize,
        summarise: bool,
        cell: impl Fn(usize, usize) -> DisplayValue,
        column_label: impl Fn(usize) -> String,
    ) -> Grid {
        let summarise = summarise && n_rows.saturating_mul(n_columns) > SUMMARY_THRESHOLD;
        let shown_columns = shown(n_columns, summarise);
        let rows = shown(n_rows, summarise)
            .into_iter()
            .map(|row| {
                let cells = shown_columns
                    .iter()
                    .map(|column| match (row, column) {
                        (Some(row), Some(column)) => match cell(row, *column) {
                            DisplayValue::Scalar(scalar) => format_scalar(scalar),
                            other @ (DisplayValue::Con(..)
                            | DisplayValue::Struct(..)
                            | DisplayValue::Text(_)) => super::format_value(&other, false),
                            _ => String::new(),
                        },
                        _ => "...".to_string(),
                    })
                    .collect();
                (row.map(|row| row.to_string()), cells)
            })
            .collect();
        Grid {
            columns: shown_columns
                .iter()
                .map(|column| column.map(&column_label))
                .collect(),
            rows,
        }
    }

    /// The grid box-drawn, with the row labels in the first column.
    pub fn to_text(&self) -> String {
        let mut table = Table::new();
        table
            .load_style(UTF8_FULL)
            .set_content_arrangement(ContentArrangement::Disabled);
        let header = std::iter::once(String::new()).chain(self.columns.iter().map(label_text));
        table.set_header(header);
        for (label, cells) in &self.rows {
            let row = std::iter::once(label_text(label)).chain(cells.iter().cloned());
            table.add_row(row);
        }
        for column in table.column_iter_mut().skip(1) {
            column.set_cell_alignment(CellAlignment::Right);
        }
        table
            .to_string()
            .lines()
            .map(str::trim_end)
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The grid as an HTML table, row labels as `<th>`.
    pub fn to_html(&self) -> String {
        let mut html = String::from("<table class=\"dx-table\">\n<thead><tr><th></th>");
        for column in &self.columns {
            html.push_str(&format!("<th>{}</th>", escape_html(&label_text(column))));
        }
        html.push_str("</tr></thead>\n<tbody>\n");
        for (label, cells) in &self.rows {
            html.push_str(&format!("<tr><th>{}</th>", escape_html(&label_text(label))));
            for cell in cells {
                html.push_str(&format!(
                    "<td style=\"text-align:right\">{}</td>",
                    escape_html(cell)
                ));
            }
            html.push_str("</tr>\n");
        }
        html.push_str("</tbody>\n</table>");
        html
    }
}

fn label_text(label: &Option<String>) -> String {
    label.clone().unwrap_or_else(|| "...".to_string())
}

fn table_items(value: &DisplayValue) -> Option<&[DisplayValue]> {
    match value {
        DisplayValue::Table(items) => Some(items),
        _ => None,
    }
}

/// Whether every item is one cell: a scalar, a string or character, a value of a user type.
fn all_scalars(items: &[DisplayValue]) -> bool {
    items.iter().all(|item| {
        matches!(
            item,
            DisplayValue::Scalar(_)
                | DisplayValue::Text(_)
                | DisplayValue::Con(..)
                | DisplayValue::Struct(..)
        )
    })
}

/// Text made safe inside HTML elements and attributes.
pub fn escape_html(text: &str) -> String {
    let mut res = String::with_capacity(text.len());
    for ch in text.chars() {
        match ch {
            '&' => res.push_str("&amp;"),
            '<' => res.push_str("&lt;"),
            '>' => res.push_str("&gt;"),
            '"' => res.push_str("&quot;"),
            ch => res.push(ch),
        }
    }
    res
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::core::ir::Scalar;

    fn floats(xs: &[f32]) -> DisplayValue {
        DisplayValue::f32_table(xs)
    }

    #[test]
    fn a_matrix_has_index_labels() {
        let matrix = DisplayValue::Table(vec![floats(&[1.0, 2.0]), floats(&[3.0, 40.5])]);
        let grid = Grid::from_value(&matrix, true).expect("a 2-D table is a grid");
        expect![[r#"
            ┌───┬────┬──────┐
            │   ┆  0 ┆    1 │
            ╞═══╪════╪══════╡
            │ 0 ┆ 1. ┆   2. │
            ├╌╌╌┼╌╌╌╌┼╌╌╌╌╌╌┤
            │ 1 ┆ 3. ┆ 40.5 │
            └───┴────┴──────┘"#]]
        .assert_eq(&grid.to_text());
        assert!(grid
            .to_html()
            .contains("<tr><th>1</th><td style=\"text-align:right\">3.</td>"));
    }

    #[test]
    fn tuples_of_columns_and_vectors() {
        let tuple = DisplayValue::Tuple(vec![floats(&[1.0, 2.0]), floats(&[3.0, 4.0])]);
        let grid = Grid::from_value(&tuple, false).expect("equal columns");
        assert_eq!(grid.columns, [Some(".0".into()), Some(".1".into())]);
        assert_eq!(
            grid.rows[1],
            (Some("1".into()), vec!["2.".into(), "4.".into()])
        );
        let ragged = DisplayValue::Tuple(vec![floats(&[1.0]), floats(&[3.0, 4.0])]);
        assert_eq!(Grid::from_value(&ragged, false), None);
        assert_eq!(
            Grid::from_value(&floats(&[5.0]), false).map(|g| g.rows.len()),
            Some(1)
        );
        assert_eq!(
            Grid::from_value(&DisplayValue::Scalar(Scalar::F32(1.0)), false),
            None
        );
    }

    #[test]
    fn big_grids_are_summarised() {
        let big = floats(&vec![0.5; 2000]);
        let grid = Grid::from_value(&big, true).expect("a vector is a grid");
        assert_eq!(grid.rows.len(), 7);
        assert_eq!(grid.rows[3].0, None);
        assert_eq!(
            Grid::from_value(&big, false).map(|grid| grid.rows.len()),
            Some(2000)
        );
    }
}
