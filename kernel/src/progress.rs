//! A cell that runs for more than about a second shows its progress in the notebook: one
//! display, updated in place (`update_display_data`) twice a second with the elapsed time and,
//! where the engine knows it, a bar of loop or schedule steps; emptied when the cell ends.

use std::sync::Arc;
use std::time::{Duration, Instant};

use dx_lang::display::escape_html;
use dx_lang::exec::progress::Progress;
use jupyter_protocol::{
    DisplayData, JupyterMessage, Media, MediaType, Transient, UpdateDisplayData,
};

use crate::server::Publisher;

/// Work shorter than this shows nothing.
const DELAY: Duration = Duration::from_secs(1);
const TICK: Duration = Duration::from_millis(500);

/// Shows the progress of the cell `parent` until the returned task is told to stop (by
/// dropping or sending on `stop`).
pub fn watch(
    progress: Arc<Progress>,
    publisher: Publisher,
    parent: JupyterMessage,
    mut stop: tokio::sync::oneshot::Receiver<()>,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let started = Instant::now();
        tokio::select! {
            _ = &mut stop => return,
            _ = tokio::time::sleep(DELAY) => {}
        }
        let display_id = format!("dx-progress-{}", parent.header.msg_id);
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
        loop {
            tokio::select! {
                _ = &mut stop => break,
                _ = tokio::time::sleep(TICK) => {
                    publisher.child(UpdateDisplayData::new(media(&progress, started), &display_id), &parent);
                }
            }
        }
        // The cell has ended: the display is emptied.
        let empty = Media {
            content: vec![
                MediaType::Plain(String::new()),
                MediaType::Html(String::new()),
            ],
        };
        publisher.child(UpdateDisplayData::new(empty, &display_id), &parent);
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
