//! The shell channel at the wire level.
//!
//! jupyter-protocol parses message contents strictly: a `history_request` search without `n`
//! or `unique` (as jupyter_client sends one) does not parse, and `Connection::read` then loses
//! the whole message, so it could never be answered. Here the signature is checked first
//! (`RawMessage::from_multipart`: a message with a bad signature is dropped, never parsed),
//! then the content is parsed with the protocol's defaults filled in. Replies are signed as
//! jupyter-zmq-client signs them: HMAC-SHA256 over header, parent header, metadata and
//! content, in lower-case hex.

use bytes::Bytes;
use jupyter_protocol::{ConnectionInfo, Header, JupyterMessage, JupyterMessageContent};
use jupyter_zmq_client::RawMessage;
use ring::hmac;
use zeromq::{RouterRecvHalf, RouterSendHalf, Socket, SocketRecv, SocketSend, ZmqMessage};

/// The delimiter between ZeroMQ identities and the message parts.
const DELIMITER: &[u8] = b"<IDS|MSG>";

/// Why a read gave no message.
pub enum ReadError {
    /// The socket failed: the kernel cannot go on.
    Socket(zeromq::ZmqError),
    /// One message was dropped (bad signature, not a Jupyter message); the socket is fine.
    Dropped(String),
}

pub struct ShellReader {
    socket: RouterRecvHalf,
    key: Option<hmac::Key>,
}

pub struct ShellWriter {
    socket: RouterSendHalf,
    key: Option<hmac::Key>,
    session_id: String,
}

fn key(info: &ConnectionInfo) -> Option<hmac::Key> {
    (!info.key.is_empty()).then(|| hmac::Key::new(hmac::HMAC_SHA256, info.key.as_bytes()))
}

/// Binds the shell socket of a connection file.
pub async fn bind_shell(
    info: &ConnectionInfo,
    session_id: &str,
) -> Result<(ShellWriter, ShellReader), zeromq::ZmqError> {
    let mut socket = zeromq::RouterSocket::new();
    socket.bind(&info.shell_url()).await?;
    let (send, recv) = socket.split();
    let writer = ShellWriter {
        socket: send,
        key: key(info),
        session_id: session_id.to_string(),
    };
    let reader = ShellReader {
        socket: recv,
        key: key(info),
    };
    Ok((writer, reader))
}

impl ShellReader {
    pub async fn read(&mut self) -> Result<JupyterMessage, ReadError> {
        let multipart = self.socket.recv().await.map_err(ReadError::Socket)?;
        let raw = RawMessage::from_multipart(multipart, &self.key)
            .map_err(|err| ReadError::Dropped(format!("bad signature or framing: {err}")))?;
        parse(raw).map_err(|err| ReadError::Dropped(format!("not a Jupyter message: {err}")))
    }
}

fn parse(raw: RawMessage) -> serde_json::Result<JupyterMessage> {
    let header: Header = serde_json::from_slice(&raw.jparts[0])?;
    // An empty parent header is `{}`, which is no header.
    let parent_header = serde_json::from_slice(&raw.jparts[1]).ok();
    let metadata = serde_json::from_slice(&raw.jparts[2])?;
    let mut content: serde_json::Value = serde_json::from_slice(&raw.jparts[3])?;
    fill_defaults(&header.msg_type, &mut content);
    let content = JupyterMessageContent::from_type_and_content(&header.msg_type, content)?;
    Ok(JupyterMessage {
        zmq_identities: raw.zmq_identities,
        header,
        parent_header,
        metadata,
        content,
        buffers: raw.jparts[4..].to_vec(),
        channel: None,
    })
}

/// Fills in the fields that the protocol lets clients leave out but jupyter-protocol requires.
fn fill_defaults(msg_type: &str, content: &mut serde_json::Value) {
    let defaults: &[(&str, serde_json::Value)] = match msg_type {
        "history_request" => &[
            ("output", serde_json::Value::Bool(false)),
            ("raw", serde_json::Value::Bool(true)),
            ("unique", serde_json::Value::Bool(false)),
            ("n", serde_json::Value::from(0)),
            ("session", serde_json::Value::Null),
            ("start", serde_json::Value::from(0)),
            ("stop", serde_json::Value::from(0)),
        ],
        _ => &[],
    };
    if let Some(object) = content.as_object_mut() {
        for (name, value) in defaults {
            object
                .entry(name.to_string())
                .or_insert_with(|| value.clone());
        }
    }
}

impl ShellWriter {
    pub async fn send(&mut self, message: JupyterMessage) -> anyhow::Result<()> {
        let message = message.with_session(&self.session_id);
        let parts: [Vec<u8>; 4] = [
            serde_json::to_vec(&message.header)?,
            match &message.parent_header {
                Some(parent) => serde_json::to_vec(parent)?,
                None => b"{}".to_vec(),
            },
            serde_json::to_vec(&message.metadata)?,
            serde_json::to_vec(&message.content)?,
        ];
        let signature = match &self.key {
            Some(key) => {
                let mut context = hmac::Context::with_key(key);
                for part in &parts {
                    context.update(part);
                }
                data_encoding::HEXLOWER.encode(context.sign().as_ref())
            }
            None => String::new(),
        };
        let mut frames: Vec<Bytes> = message.zmq_identities.clone();
        frames.push(Bytes::from_static(DELIMITER));
        frames.push(Bytes::from(signature.into_bytes()));
        frames.extend(parts.into_iter().map(Bytes::from));
        frames.extend(message.buffers.iter().cloned());
        let multipart = ZmqMessage::try_from(frames).map_err(|err| anyhow::anyhow!("{err}"))?;
        self.socket.send(multipart).await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_history_search_without_n_parses() {
        let mut content = serde_json::json!({"hist_access_type": "search", "pattern": "x*"});
        fill_defaults("history_request", &mut content);
        let parsed = JupyterMessageContent::from_type_and_content("history_request", content);
        assert!(matches!(
            parsed,
            Ok(JupyterMessageContent::HistoryRequest(_))
        ));
    }
}
