//! A block that runs for more than about a second shows its progress in the notebook: one
//! display per such block, updated in place (`update_display_data`) twice a second with the
//! block's elapsed time and, where the engine knows it, a bar of loop or schedule steps;
//! emptied when the block ends (the next long block of the cell gets a display of its own).

use std::sync::Arc;
use std::time::{Duration, Instant};

use dx_lang::display::escape_html;
use dx_lang::exec::progress::Progress;
use jupyter_protocol::{
    DisplayData, JupyterMessage, Media, MediaType, Transient, UpdateDisplayData,
};
use tokio::sync::mpsc::UnboundedReceiver;

use crate::server::Publisher;

/// Work shorter than this shows nothing.
const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(500);

/// What the cell's evaluation tells the watcher: a code block starts or has run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Block {
    Started,
    Ended,
}

/// Shows the progress of each long block of the cell `parent`, as `blocks` reports them,
/// until `blocks` closes (the cell has ended).
pub fn watch(
    progress: Arc<Progress>,
    publisher: Publisher,
    parent: JupyterMessage,
    mut blocks: UnboundedReceiver<Block>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut shown = 0;
        // Each turn: one block, from its start to its end.
        while let Some(event) = blocks.recv().await {
            if event != Block::Started {
                continue;
            }
            let started = Instant::now();
            tokio::select! {
                event = blocks.recv() => match event {
                    Some(_) => continue, // a short block: nothing shown
                    None => return,
                },
                _ = tokio::time::sleep(DELAY) => {}
            }
            shown += 1;
            let display_id = format!("dx-progress-{}-{shown}", parent.header.msg_id);
            publisher.child(
                DisplayData {
                    data: media(&progress, started),
                    metadata: Default::default(),
                    transient: Some(Transient {
                        display_id: Some(display_id.clone()),
                    }),
                },
                &parent,
            );
            let ended = loop {
                tokio::select! {
                    event = blocks.recv() => break event.is_none(),
                    _ = tokio::time::sleep(TICK) => {
                        publisher.child(UpdateDisplayData::new(media(&progress, started), &display_id), &parent);
                    }
                }
            };
            // The block has ended: its display is emptied.
            let empty = Media {
                content: vec![
                    MediaType::Plain(String::new()),
                    MediaType::Html(String::new()),
                ],
            };
            publisher.child(UpdateDisplayData::new(empty, &display_id), &parent);
            if ended {
                return;
            }
        }
    })
}
/// The progress as text and as HTML (a `<progress>` bar when the total is known).
fn media(progress: &Progress, started: Instant) -> Media {
    let elapsed = format!("running for {:.1} s", started.elapsed().as_secs_f64());
    let (text, html) = match progress.snapshot().bar() {
        Some((done, total, unit)) => (
            format!("{elapsed}: {done}/{total} {unit}"),
            format!(
                "<progress value=\"{done}\" max=\"{total}\" style=\"width:30em\"></progress> {}",
                escape_html(&format!("{elapsed}: {done}/{total} {unit}"))
            ),
        ),
        None => (elapsed.clone(), escape_html(&elapsed)),
    };
    Media {
        content: vec![MediaType::Plain(text), MediaType::Html(html)],
    }
}
