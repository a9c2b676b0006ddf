/**
 * The hub's WebSocket class (part of the ws adapter, with socket-server.ts): ws's own, plus
 * `sendBroadcast` for broadcasts. `ws.send` frames every message again for every socket (a header
 * buffer, a Buffer view, cork + two writes + uncork: one writev) — at 10,000 sockets per promotion
 * that framing cost more user CPU than the syscalls. `sendBroadcast` builds the complete
 * server-to-client frame (RFC 6455 §5.2: FIN, binary, unmasked) once per broadcast and writes
 * those same bytes to each socket in one plain write.
 *
 * Writing to the raw socket is the same as ws.send only while ws's sender has nothing queued:
 * that holds without per-message deflate (the hub never enables it) and without Blob data (the
 * hub sends none). If ws's internals ever look different, `sendBroadcast` falls back to `send`.
 */
import type { Duplex } from 'node:stream';
import { WebSocket } from 'ws';
import type { BroadcastFrame } from '../core/peer.ts';

/** ws internals `sendBroadcast` relies on (ws 8: lib/websocket.js, lib/sender.js) */
interface WsInternals {
  _socket?: Duplex;
  _sender?: { _state?: number; _queue?: unknown[] };
}
/** ws's sender state when nothing is being deflated or read from a Blob */
const SENDER_IDLE = 0;

/** The complete unmasked binary frame of `payload` (FIN set, opcode 2). */
export function binaryFrame(payload: Uint8Array): Uint8Array {
  const n = payload.byteLength;
  const header = n < 126 ? 2 : n < 65_536 ? 4 : 10;
  const out = Buffer.allocUnsafe(header + n);
  out[0] = 0x82;
  if (n < 126) out[1] = n;
  else if (n < 65_536) {
    out[1] = 126;
    out.writeUInt16BE(n, 2);
  } else {
    out[1] = 127;
    out.writeUInt32BE(Math.floor(n / 2 ** 32), 2);
    out.writeUInt32BE(n >>> 0, 6);
  }
  out.set(payload, header);
  return out;
}

export class HubSocket extends WebSocket {
  /** Peer.cork: the socket's own (ws corks it too around a send; calls nest) */
  cork(): void {
    (this as unknown as WsInternals)._socket?.cork();
  }

  uncork(): void {
    (this as unknown as WsInternals)._socket?.uncork();
  }

  /** Peer.sendBroadcast: the frame's wire bytes (built by the first socket, cached on the frame). */
  sendBroadcast(frame: BroadcastFrame): void {
    const socket = this.rawSocket();
    if (socket === undefined) {
      this.send(frame.payload);
      return;
    }
    frame.wire ??= binaryFrame(frame.payload);
    socket.write(frame.wire);
  }

  /** The underlying socket while bytes written to it are the next on this WebSocket's wire (see the top), else undefined. */
  rawSocket(): Duplex | undefined {
    const { _socket: socket, _sender: sender } = this as unknown as WsInternals;
    if (
      this.readyState !== WebSocket.OPEN ||
      sender?._state !== SENDER_IDLE ||
      (sender._queue !== undefined && sender._queue.length > 0)
    )
      return undefined;
    return socket;
  }
}
