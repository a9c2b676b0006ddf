/**
 * The floor under the hub's cost per write: a bare `ws` server (the hub's WebSocket library, the
 * hub's options) that answers every frame it receives with one small pre-encoded frame the size
 * of an Ack, and does nothing else — no decode, no bookkeeping. What it costs per frame is Node's
 * and the kernel's share of a write through the hub: a wake-up, a socket read, ws's framing and a
 * socket write. writecost.bench.ts drives it with the same loop and frame sizes as the hub.
 */
import { once } from 'node:events';
import { WebSocketServer } from 'ws';
import { encode, MsgType } from '../../sdk/src/wire/protocol.ts';

export interface WsEcho {
  url: string;
  close(): Promise<void>;
}

/** The answer: an Ack as the hub encodes one for a write nobody holds (a typical id and seq). */
export const ECHO_ANSWER = encode({ t: MsgType.Ack, id: 3421, seq: 0, fenced: [], ms: 0 });

export async function startWsEcho(): Promise<WsEcho> {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 4 << 20 });
  wss.on('connection', (ws) => {
    ws.on('message', () => ws.send(ECHO_ANSWER));
    ws.on('error', () => ws.terminate());
  });
  await once(wss, 'listening');
  const { port } = wss.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
