//! The kernel's sockets and request loops (Jupyter messaging protocol 5.3).
//!
//! - heartbeat: echoes pings.
//! - iopub (XPUB): one task owns it; everyone else publishes through a channel. A new
//!   subscriber gets `iopub_welcome` (JEP 65).
//! - control: `interrupt_request` sets the session's interrupt flag (the running cell stops at
//!   its next check, within 100 ms, and the session stays usable); `shutdown_request` ends the
//!   kernel (a restart is the client starting a new one); `kernel_info_request` is answered too.
//! - shell: a reader task verifies and queues requests (a message with a bad signature is
//!   dropped and logged, never handled); the handler answers them one at a time, with `busy`
//!   before and `idle` after each, and runs cells on the session's thread (`worker`).
//!
//! Every reply is a child of its request. The kernel ends when shutdown is asked for, any
//! socket fails or the process that started it is gone (`parent`); the sockets are then
//! dropped together.

use std::path::Path;
use std::sync::atomic::Ordering;

use anyhow::Context as _;
use dx_lang::display::render_output;
use dx_lang::session::{ChunkResult, Output, Progress, SessionConfig};
use jupyter_protocol::{
    CodeMirrorMode, CommInfoReply, CompleteReply, ConnectionInfo, ExecuteInput, ExecuteReply,
    ExecuteRequest, ExecutionCount, HistoryReply, InspectReply, InterruptReply, IoPubWelcome,
    IsCompleteReply, JupyterMessage, JupyterMessageContent, KernelInfoReply, LanguageInfo, Media,
    MediaType, ReplyError, ReplyStatus, ShutdownReply, Status,
};
use jupyter_zmq_client::{
    create_kernel_control_connection, create_kernel_heartbeat_connection,
    create_kernel_iopub_xpub_connection, create_kernel_stdin_connection, KernelControlConnection,
    RuntimeError, SubscriptionEvent,
};
use tokio::sync::mpsc;

use crate::history::History;
use crate::introspect;
use crate::progress::Block;
use crate::render::{chunk_messages, error_output, output_messages};
use crate::wire::{self, ReadError, ShellReader, ShellWriter};
use crate::worker::Worker;

/// Runs the kernel on the sockets a connection file names, until it is asked to shut down.
pub fn run(connection_file: &Path, config: SessionConfig) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(connection_file)
        .with_context(|| format!("cannot read {}", connection_file.display()))?;
    let info: ConnectionInfo = serde_json::from_str(&text)
        .with_context(|| format!("{} is not a connection file", connection_file.display()))?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    runtime.block_on(serve(info, config))
}

/// Sends messages to the iopub task.
#[derive(Clone)]
pub struct Publisher(mpsc::UnboundedSender<JupyterMessage>);

impl Publisher {
    fn send(&self, message: JupyterMessage) {
        // The iopub task ends only when the kernel does.
        let _ = self.0.send(message);
    }

    pub fn child(&self, content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) {
        self.send(JupyterMessage::new(content.into(), Some(parent)));
    }
}

async fn serve(info: ConnectionInfo, config: SessionConfig) -> anyhow::Result<()> {
    let session_id = format!("dx-kernel-{}", std::process::id());
    let mut heartbeat = create_kernel_heartbeat_connection(&info).await?;
    let (shell_writer, shell_reader) = wire::bind_shell(&info, &session_id).await?;
    let control = create_kernel_control_connection(&info, &session_id).await?;
    // Nothing reads from stdin (dx has no input function), but the socket must exist.
    let _stdin = create_kernel_stdin_connection(&info, &session_id).await?;
    let mut iopub = create_kernel_iopub_xpub_connection(&info, &session_id).await?;

    let (worker, startup) = Worker::spawn(config)?;
    for output in &startup {
        eprintln!("dx kernel: {}", render_output(output, ""));
    }
    let (publish_tx, mut publish_rx) = mpsc::unbounded_channel::<JupyterMessage>();
    let publisher = Publisher(publish_tx);
    let (shutdown_tx, mut shutdown_rx) = mpsc::unbounded_channel::<()>();

    let mut tasks = tokio::task::JoinSet::new();
    tasks.spawn(async move { while heartbeat.single_heartbeat().await.is_ok() {} });
    tasks.spawn(async move {
        loop {
            tokio::select! {
                message = publish_rx.recv() => match message {
                    Some(message) => {
                        if let Err(err) = iopub.send(message).await {
                            eprintln!("dx kernel: cannot publish on iopub: {err}");
                        }
                    }
                    None => break,
                },
                event = iopub.recv_subscription() => {
                    if let Ok(SubscriptionEvent::Subscribe(topic)) = event {
                        let _ = iopub.send(IoPubWelcome::new(topic).into()).await;
                    }
                }
            }
        }
    });
    let interrupt = worker.interrupt_flag();
    tasks.spawn(control_loop(
        control,
        publisher.clone(),
        worker.interrupt_flag(),
        shutdown_tx,
    ));
    let (queue_tx, queue_rx) = mpsc::unbounded_channel();
    tasks.spawn(read_shell(shell_reader, queue_tx));
    let shell = Shell {
        writer: shell_writer,
        publisher,
        worker,
        execution_count: ExecutionCount::new(0),
        history: History::default(),
        queue: queue_rx,
    };
    tasks.spawn(shell.serve());

    tokio::select! {
        _ = shutdown_rx.recv() => {}
        _ = tasks.join_next() => {}
        _ = crate::parent::gone() => {
            eprintln!("dx kernel: the process that started the kernel is gone; exiting");
            interrupt.store(true, Ordering::SeqCst);
        }
    }
    tasks.abort_all();
    Ok(())
}

/// Whether a read error means the socket is gone (rather than one bad message).
fn socket_failed(err: &RuntimeError) -> bool {
    matches!(err, RuntimeError::ZmqError(_) | RuntimeError::IoError(_))
}

/// Reads shell requests into the queue. A message that fails its signature check (or does not
/// parse) is dropped and logged, never handled.
async fn read_shell(mut reader: ShellReader, queue: mpsc::UnboundedSender<JupyterMessage>) {
    loop {
        match reader.read().await {
            Ok(message) => {
                if queue.send(message).is_err() {
                    return;
                }
            }
            Err(ReadError::Socket(err)) => {
                eprintln!("dx kernel: the shell socket failed: {err}");
                return;
            }
            Err(ReadError::Dropped(why)) => {
                eprintln!("dx kernel: dropped a message on the shell channel: {why}");
            }
        }
    }
}

async fn control_loop(
    mut control: KernelControlConnection,
    publisher: Publisher,
    interrupt: dx_lang::session::InterruptFlag,
    shutdown: mpsc::UnboundedSender<()>,
) {
    loop {
        let message = match control.read().await {
            Ok(message) => message,
            Err(err) if socket_failed(&err) => {
                eprintln!("dx kernel: the control socket failed: {err}");
                return;
            }
            Err(err) => {
                eprintln!("dx kernel: dropped a message on the control channel: {err}");
                continue;
            }
        };
        publisher.child(Status::busy(), &message);
        let reply: Option<JupyterMessageContent> = match &message.content {
            JupyterMessageContent::InterruptRequest(_) => {
                interrupt.store(true, Ordering::SeqCst);
                Some(InterruptReply::new().into())
            }
            JupyterMessageContent::ShutdownRequest(request) => Some(
                ShutdownReply {
                    restart: request.restart,
                    status: ReplyStatus::Ok,
                    error: None,
                }
                .into(),
            ),
            JupyterMessageContent::KernelInfoRequest(_) => Some(kernel_info().into()),
            other => {
                eprintln!(
                    "dx kernel: ignored `{}` on the control channel",
                    other.message_type()
                );
                None
            }
        };
        if let Some(reply) = reply {
            let is_shutdown = matches!(reply, JupyterMessageContent::ShutdownReply(_));
            if let Err(err) = control
                .send(JupyterMessage::new(reply, Some(&message)))
                .await
            {
                eprintln!("dx kernel: cannot reply on the control channel: {err}");
            }
            publisher.child(Status::idle(), &message);
            if is_shutdown {
                // Stop the running cell too, so that the session's thread ends soon.
                interrupt.store(true, Ordering::SeqCst);
                let _ = shutdown.send(());
                return;
            }
        } else {
            publisher.child(Status::idle(), &message);
        }
    }
}

/// What the kernel says about itself and dx.
fn kernel_info() -> KernelInfoReply {
    KernelInfoReply {
        status: ReplyStatus::Ok,
        protocol_version: "5.3".to_string(),
        implementation: "dx".to_string(),
        implementation_version: env!("CARGO_PKG_VERSION").to_string(),
        language_info: LanguageInfo {
            name: "dx".to_string(),
            version: env!("CARGO_PKG_VERSION").to_string(),
            mimetype: Some("text/x-dx".to_string()),
            file_extension: Some(".dx".to_string()),
            // The lexer in editors/pygments (notebooks, nbconvert). CodeMirror has no dx mode:
            // Haskell's reads `def`, `for`, `\x.` and `--` comments tolerably while editing.
            pygments_lexer: Some("dx".to_string()),
            codemirror_mode: Some(CodeMirrorMode::Simple("haskell".to_string())),
            nbconvert_exporter: None,
        },
        banner: format!(
            "dx {}: a Dex-like differentiable array language",
            env!("CARGO_PKG_VERSION")
        ),
        help_links: Vec::new(),
        debugger: false,
        error: None,
    }
}

struct Shell {
    writer: ShellWriter,
    publisher: Publisher,
    worker: Worker,
    execution_count: ExecutionCount,
    history: History,
    queue: mpsc::UnboundedReceiver<JupyterMessage>,
}

impl Shell {
    async fn serve(mut self) {
        while let Some(message) = self.queue.recv().await {
            self.handle(&message).await;
        }
    }

    async fn reply(&mut self, content: impl Into<JupyterMessageContent>, parent: &JupyterMessage) {
        let reply = JupyterMessage::new(content.into(), Some(parent));
        if let Err(err) = self.writer.send(reply).await {
            eprintln!("dx kernel: cannot reply on the shell channel: {err}");
        }
    }

    /// Answers one request, between `busy` and `idle`.
    async fn handle(&mut self, message: &JupyterMessage) {
        self.publisher.child(Status::busy(), message);
        match &message.content {
            JupyterMessageContent::KernelInfoRequest(_) => {
                self.reply(kernel_info(), message).await;
            }
            JupyterMessageContent::ExecuteRequest(request) => {
                let failed = self.execute(request, message).await;
                if failed && request.stop_on_error {
                    self.abort_queued_executes().await;
                }
            }
            JupyterMessageContent::IsCompleteRequest(request) => {
                let (status, indent) = introspect::is_complete(&request.code);
                self.reply(IsCompleteReply::new(status, indent), message)
                    .await;
            }
            JupyterMessageContent::CompleteRequest(request) => {
                let names = self
                    .worker
                    .run(|session| session.completion_names())
                    .await
                    .unwrap_or_default();
                let completion = introspect::complete(&request.code, request.cursor_pos, &names);
                let reply = CompleteReply {
                    matches: completion.matches,
                    cursor_start: completion.cursor_start,
                    cursor_end: completion.cursor_end,
                    metadata: Default::default(),
                    status: ReplyStatus::Ok,
                    error: None,
                };
                self.reply(reply, message).await;
            }
            JupyterMessageContent::InspectRequest(request) => {
                let reply = self.inspect(&request.code, request.cursor_pos).await;
                self.reply(reply, message).await;
            }
            JupyterMessageContent::HistoryRequest(request) => {
                let reply = HistoryReply {
                    history: self.history.entries(request),
                    status: ReplyStatus::Ok,
                    error: None,
                };
                self.reply(reply, message).await;
            }
            JupyterMessageContent::CommInfoRequest(_) => {
                self.reply(CommInfoReply::default(), message).await;
            }
            other => {
                eprintln!(
                    "dx kernel: ignored `{}` on the shell channel",
                    other.message_type()
                );
            }
        }
        self.publisher.child(Status::idle(), message);
    }

    /// Runs a cell; returns whether it reported an error.
    async fn execute(&mut self, request: &ExecuteRequest, message: &JupyterMessage) -> bool {
        if request.store_history {
            self.execution_count.increment();
            self.history.push(request.code.clone());
        }
        let count = self.execution_count;
        if !request.silent {
            self.publisher.child(
                ExecuteInput {
                    code: request.code.clone(),
                    execution_count: count,
                },
                message,
            );
        }
        // The evaluation tells the progress display when each block starts and ends; the
        // channel closes with the cell.
        let (blocks, block_events) = mpsc::unbounded_channel();
        let progress = (!request.silent).then(|| {
            crate::progress::watch(
                self.worker.progress(),
                self.publisher.clone(),
                message.clone(),
                block_events,
            )
        });
        // Each block's outputs are published as soon as the block has run.
        let code = request.code.clone();
        let publisher = self.publisher.clone();
        let parent = message.clone();
        let silent = request.silent;
        let results: Option<Vec<ChunkResult>> = self
            .worker
            .run(move |session| {
                session.eval_cell_with(&code, &mut |progress| match progress {
                    Progress::Started { .. } => {
                        let _ = blocks.send(Block::Started);
                    }
                    Progress::Finished(result) => {
                        if !silent {
                            for content in chunk_messages(result, &code, count) {
                                publisher.child(content, &parent);
                            }
                        }
                        let _ = blocks.send(Block::Ended);
                    }
                })
            })
            .await;
        if let Some(progress) = progress {
            // Its last message (the emptied display) goes out before the reply.
            let _ = progress.await;
        }
        let outputs: Vec<Output> = match results {
            Some(results) => results
                .into_iter()
                .flat_map(|result| result.outputs)
                .collect(),
            None => {
                let panicked = Output::Error(dx_lang::session::Diagnostic::new(
                    dx_lang::session::Code::Panic,
                    "the evaluation panicked; the session may be inconsistent",
                    None,
                ));
                if !silent {
                    self.publisher
                        .child(output_messages(&panicked, &request.code, count), message);
                }
                vec![panicked]
            }
        };
        let first_error = outputs.iter().find_map(|output| match output {
            Output::Error(diag) => Some(error_output(diag, &request.code)),
            _ => None,
        });
        let failed = first_error.is_some();
        let reply = ExecuteReply {
            status: if failed {
                ReplyStatus::Error
            } else {
                ReplyStatus::Ok
            },
            execution_count: count,
            payload: Vec::new(),
            // `null` fails the schema of jupyter_kernel_test (a known pitfall of the crate).
            user_expressions: Some(Default::default()),
            error: first_error.map(|error| {
                Box::new(ReplyError {
                    ename: error.ename,
                    evalue: error.evalue,
                    traceback: error.traceback,
                })
            }),
        };
        self.reply(reply, message).await;
        failed
    }

    /// After a cell fails with `stop_on_error`, the execute requests already queued are not run:
    /// each gets an `aborted` reply (as ipykernel does). Other requests are answered as usual.
    async fn abort_queued_executes(&mut self) {
        while let Ok(message) = self.queue.try_recv() {
            if let JupyterMessageContent::ExecuteRequest(_) = &message.content {
                self.publisher.child(Status::busy(), &message);
                let reply = ExecuteReply {
                    status: ReplyStatus::Aborted,
                    execution_count: self.execution_count,
                    payload: Vec::new(),
                    user_expressions: Some(Default::default()),
                    error: None,
                };
                self.reply(reply, &message).await;
                self.publisher.child(Status::idle(), &message);
            } else {
                Box::pin(self.handle(&message)).await;
            }
        }
    }

    /// The type of the name under the cursor.
    async fn inspect(&mut self, code: &str, cursor_pos: usize) -> InspectReply {
        let mut reply = InspectReply {
            found: false,
            data: Media::default(),
            metadata: Default::default(),
            status: ReplyStatus::Ok,
            error: None,
        };
        let Some(name) = introspect::name_at(code, cursor_pos).map(str::to_string) else {
            return reply;
        };
        let query = format!(":t {name}\n");
        let outputs = self
            .worker
            .run(move |session| session.eval_source(&query))
            .await
            .unwrap_or_default();
        let ty = outputs
            .into_iter()
            .flat_map(|result| result.outputs)
            .find_map(|output| match output {
                Output::Type(ty) => Some(ty),
                _ => None,
            });
        if let Some(ty) = ty {
            reply.found = true;
            reply.data = Media {
                content: vec![
                    MediaType::Plain(format!("{name} : {ty}")),
                    MediaType::Markdown(format!("`{name} : {ty}`")),
                ],
            };
        }
        reply
    }
}
