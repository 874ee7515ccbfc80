//! Reads the client's messages so that one malformed message cannot end the session.
//!
//! tower-lsp-server stops reading at the first message it cannot decode (tokio-util's framed
//! reader ends its stream after an error), and the server then exits as if the client had gone.
//! A client bug would do that, and so would a document holding an unpaired UTF-16 surrogate,
//! which JavaScript clients send as a `\udXXX` escape that serde_json rejects. So a thread reads
//! stdin first and passes on only messages that decode: an unpaired surrogate becomes U+FFFD
//! (one UTF-16 unit, like the surrogate, so the client's positions still hold), and any other
//! undecodable message is dropped and reported in the client's log.

use std::io::{self, BufRead, Read};
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, ReadBuf};
use tokio::sync::mpsc;
use tower_lsp_server::jsonrpc::{Request, Response};
use tower_lsp_server::ls_types::MessageType;
use tower_lsp_server::Client;

use super::ordered::report;

/// The client's messages, re-framed, as the byte stream tower-lsp-server reads.
pub struct ClientInput {
    frames: mpsc::Receiver<Vec<u8>>,
    frame: Vec<u8>,
    read: usize,
}

impl ClientInput {
    /// Starts the thread that reads stdin. Must be called inside the tokio runtime, which the
    /// thread uses to report dropped messages to `client`.
    pub fn from_stdin(client: Client) -> ClientInput {
        // A few frames of slack; beyond that the reader waits for the server to catch up.
        let (sender, frames) = mpsc::channel(16);
        let runtime = tokio::runtime::Handle::current();
        std::thread::Builder::new()
            .name("cutune-stdin".into())
            .spawn(move || {
                let _runtime = runtime.enter();
                forward(io::stdin().lock(), &sender, &client);
            })
            .expect("the stdin reader thread starts");
        ClientInput { frames, frame: Vec::new(), read: 0 }
    }
}

impl AsyncRead for ClientInput {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.read == this.frame.len() {
            match ready!(this.frames.poll_recv(cx)) {
                Some(frame) => (this.frame, this.read) = (frame, 0),
                // The reader thread has finished: end of input.
                None => return Poll::Ready(Ok(())),
            }
        }
        let n = buf.remaining().min(this.frame.len() - this.read);
        buf.put_slice(&this.frame[this.read..this.read + n]);
        this.read += n;
        Poll::Ready(Ok(()))
    }
}

/// Passes each decodable message from `input` to `frames` until the input or the server ends.
fn forward(mut input: impl BufRead, frames: &mpsc::Sender<Vec<u8>>, client: &Client) {
    loop {
        let mut body = match read_message(&mut input) {
            Ok(Incoming::Message(body)) => body,
            Ok(Incoming::BadHeader(problem)) => {
                report(client, MessageType::ERROR, format!("cutune: ignoring input from the client: {problem}"));
                continue;
            }
            // A read error on stdin is as final as its end.
            Ok(Incoming::End) | Err(_) => return,
        };
        if let Err(error) = decodes(&body) {
            let replaced = replace_unpaired_surrogates(&mut body);
            if replaced == 0 || decodes(&body).is_err() {
                report(
                    client,
                    MessageType::ERROR,
                    format!("cutune: ignoring a message from the client that is not valid JSON-RPC: {error}"),
                );
                continue;
            }
            report(
                client,
                MessageType::WARNING,
                format!("cutune: replaced {replaced} unpaired UTF-16 surrogate(s) in a message from the client with U+FFFD"),
            );
        }
        let mut frame = format!("Content-Length: {}\r\n\r\n", body.len()).into_bytes();
        frame.append(&mut body);
        if frames.blocking_send(frame).is_err() {
            return; // The server has stopped reading.
        }
    }
}

/// Whether tower-lsp-server will decode `body`: its messages are requests or responses.
fn decodes(body: &[u8]) -> Result<(), serde_json::Error> {
    serde_json::from_slice::<Request>(body).map(drop).or_else(|error| {
        serde_json::from_slice::<Response>(body).map(drop).map_err(|_| error)
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Incoming {
    Message(Vec<u8>),
    /// A header block without a usable `Content-Length`; its body, if any, cannot be found.
    BadHeader(String),
    End,
}

/// Reads one `Content-Length`-framed message (LSP base protocol).
fn read_message(input: &mut impl BufRead) -> io::Result<Incoming> {
    let mut content_length = None;
    let mut seen_header = false;
    let mut line = Vec::new();
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            return Ok(Incoming::End);
        }
        let header = line.trim_ascii_end();
        if header.is_empty() {
            if seen_header {
                break;
            }
            continue; // Blank lines between messages.
        }
        seen_header = true;
        // Searched for anywhere in the line, to find the next message after stray bytes.
        let text = String::from_utf8_lossy(header).to_ascii_lowercase();
        if let Some(at) = text.find("content-length:") {
            content_length = text[at + "content-length:".len()..].trim().parse::<u64>().ok();
        }
    }
    let Some(length) = content_length else {
        return Ok(Incoming::BadHeader("a message header without a valid Content-Length".into()));
    };
    // Grown as the bytes arrive rather than allocated up front: the length may be bogus.
    let mut body = Vec::new();
    input.take(length).read_to_end(&mut body)?;
    if (body.len() as u64) < length {
        return Ok(Incoming::End);
    }
    Ok(Incoming::Message(body))
}

#[derive(PartialEq, Eq)]
enum Surrogate {
    High,
    Low,
}

/// The surrogate that the `\uXXXX` escape at `at` encodes, if it encodes one.
fn surrogate_at(body: &[u8], at: usize) -> Option<Surrogate> {
    let escape = body.get(at..at + 6)?.strip_prefix(b"\\u")?;
    let unit = u16::from_str_radix(std::str::from_utf8(escape).ok()?, 16).ok()?;
    match unit {
        0xD800..=0xDBFF => Some(Surrogate::High),
        0xDC00..=0xDFFF => Some(Surrogate::Low),
        _ => None,
    }
}

/// Replaces, in place, each `\uXXXX` escape of an unpaired surrogate with `\uFFFD` (as long).
/// Returns how many it replaced.
fn replace_unpaired_surrogates(body: &mut [u8]) -> usize {
    let mut replaced = 0;
    let mut at = 0;
    while at < body.len() {
        if body[at] != b'\\' {
            at += 1;
            continue;
        }
        match surrogate_at(body, at) {
            Some(Surrogate::High) if surrogate_at(body, at + 6) == Some(Surrogate::Low) => at += 12,
            Some(_) => {
                body[at..at + 6].copy_from_slice(b"\\uFFFD");
                replaced += 1;
                at += 6;
            }
            // Any other escape, `\\` included: skip the escaped character.
            None => at += 2,
        }
    }
    replaced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(input: &str) -> Vec<Incoming> {
        let mut input = input.as_bytes();
        let mut messages = Vec::new();
        loop {
            match read_message(&mut input).unwrap() {
                Incoming::End => return messages,
                message => messages.push(message),
            }
        }
    }

    #[test]
    fn reads_framed_messages_and_skips_headers_it_cannot_use() {
        let input = "Content-Length: 2\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{}\
                     \r\ncontent-length:3\r\n\r\n[1]\
                     Content-Length: x\r\n\r\n\
                     {garbage}Content-Length: 4\r\n\r\nnull\
                     Content-Length: 1\r\n\r\n";
        assert_eq!(
            read_all(input),
            [
                Incoming::Message(b"{}".to_vec()),
                Incoming::Message(b"[1]".to_vec()),
                Incoming::BadHeader("a message header without a valid Content-Length".into()),
                Incoming::Message(b"null".to_vec()),
            ]
        );
    }

    #[test]
    fn unpaired_surrogates_become_replacement_characters_and_pairs_stay() {
        let mut body = br#"{"a":"\ud83d\ude80 \udc80 \\udc80 \ud800x \u0041"}"#.to_vec();
        assert_eq!(replace_unpaired_surrogates(&mut body), 2);
        assert_eq!(body, br#"{"a":"\ud83d\ude80 \uFFFD \\udc80 \uFFFDx \u0041"}"#);
        let text: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(text["a"], "🚀 \u{FFFD} \\udc80 \u{FFFD}x A");
    }

    #[test]
    fn only_requests_and_responses_decode() {
        assert!(decodes(br#"{"jsonrpc":"2.0","method":"initialized","params":{}}"#).is_ok());
        assert!(decodes(br#"{"jsonrpc":"2.0","id":1,"result":null}"#).is_ok());
        assert!(decodes(b"[1, 2]").is_err());
        assert!(decodes(b"{not json").is_err());
        assert!(decodes(br#"{"jsonrpc":"2.0","method":"m","params":{"t":"\udc80"}}"#).is_err());
    }
}
