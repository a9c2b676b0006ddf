/**
 * The decode-only sink: a WebSocket server that decodes and validates every frame with the real
 * protocol module and does nothing else. Its ingest rate is the transport's bound (ws framing +
 * msgpack decode + guards) for the hub, measured in the same run. It answers Hello with a
 * minimal frame (so that load generators start the same way against it and against the hub) and
 * Resync with an empty Snapshot, which load generators use as an in-order drain barrier.
 */
import { WebSocketServer } from 'ws';
import { once } from 'node:events';
import { decodeClientMessage, encode, MsgType } from '../../sdk/src/wire/protocol.ts';

export interface Sink {
  url: string;
  records(): number;
  close(): Promise<void>;
}

export async function startSink(): Promise<Sink> {
  let records = 0;
  const greeting = encode({ t: MsgType.Snapshot, seq: 0, hot: [] });
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, perMessageDeflate: false, maxPayload: 4 << 20 });
  wss.on('connection', (ws) => {
    ws.on('message', (data) => {
      const bytes = data as Buffer;
      let message: ReturnType<typeof decodeClientMessage>;
      try {
        message = decodeClientMessage(new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      } catch {
        ws.close(4000);
        return;
      }
      if (message.t === MsgType.Report) records += message.keys.length;
      else if (message.t === MsgType.Hello || message.t === MsgType.Resync) ws.send(greeting);
    });
    ws.on('error', () => ws.terminate());
  });
  await once(wss, 'listening');
  const { port } = wss.address() as { port: number };
  return {
    url: `ws://127.0.0.1:${port}`,
    records: () => records,
    async close() {
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
