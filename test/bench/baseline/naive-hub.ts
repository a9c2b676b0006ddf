/**
 * The naive hub the benchmarks compare against: what a first implementation of a JD HotKey-style
 * worker looks like. JSON text frames over the same `ws` library; an exact sliding window for
 * every key ever reported (a Map of slice arrays, no admission filter, no cap on keys); a
 * promotion is JSON-encoded once and written to every socket of the app.
 *
 * It is honest, not sabotaged: idle keys are swept once a second (so memory tracks the keys live
 * in the window, as any careful first version would), windows are summed only when a key's
 * count changes, and the broadcast encodes once.
 *
 *   client -> hub: {"type":"hello","app":"a","instance":"i"}
 *                  {"type":"report","keys":{"k1":12,"k2":3}}
 *                  {"type":"ping"} (answered with {"type":"pong"}: a drain barrier for benchmarks)
 *   hub -> client: {"type":"welcome"}
 *                  {"type":"promote","key":"k1","qps":1234,"at":1700000000000,"ttlMs":30000}
 *                  {"type":"demote","key":"k1"}
 */
import { WebSocketServer, type WebSocket } from 'ws';
import { once } from 'node:events';
import { NaiveWindows, type NaiveWindowOptions } from './naive-window.ts';

export interface NaiveHubOptions extends NaiveWindowOptions {
  /** @default '127.0.0.1' */
  host?: string;
  /** @default 0 (a free port) */
  port?: number;
}

export interface NaiveHub {
  url: string;
  port: number;
  /** records absorbed, keys tracked, promotions broadcast, frames sent */
  stats(): { records: number; frames: number; keys: number; promotions: number; deliveries: number; clients: number };
  close(): Promise<void>;
}

export async function startNaiveHub(opts: NaiveHubOptions = {}): Promise<NaiveHub> {
  const windows = new NaiveWindows(opts);
  const apps = new Map<string, Set<WebSocket>>();
  let records = 0;
  let frames = 0;
  let promotions = 0;
  let deliveries = 0;

  const broadcast = (app: string, message: object) => {
    const sockets = apps.get(app);
    if (!sockets) return;
    const text = JSON.stringify(message);
    for (const ws of sockets) {
      ws.send(text);
      deliveries++;
    }
  };

  const wss = new WebSocketServer({ host: opts.host ?? '127.0.0.1', port: opts.port ?? 0, perMessageDeflate: false });
  wss.on('connection', (ws) => {
    let app: string | undefined;
    ws.on('message', (data, isBinary) => {
      let message: { type?: unknown; app?: unknown; keys?: unknown };
      try {
        message = JSON.parse(isBinary ? Buffer.from(data as Buffer).toString() : String(data));
      } catch {
        ws.close(4000, 'bad json');
        return;
      }
      frames++;
      if (message.type === 'hello' && typeof message.app === 'string') {
        app = message.app;
        ws.send('{"type":"welcome"}');
        let set = apps.get(app);
        if (!set) apps.set(app, (set = new Set()));
        set.add(ws);
        return;
      }
      // in-order barrier for load generators: every earlier frame of this socket was absorbed
      if (message.type === 'ping') {
        ws.send('{"type":"pong"}');
        return;
      }
      if (message.type !== 'report' || app === undefined || typeof message.keys !== 'object' || message.keys === null)
        return;
      const now = Date.now();
      const keys = message.keys as Record<string, number>;
      for (const key in keys) {
        records++;
        const total = windows.add(key, keys[key]!, now);
        if (total >= 0) {
          promotions++;
          broadcast(app, {
            type: 'promote',
            key,
            qps: (total * 1000) / windows.windowMs,
            at: Date.now(),
            ttlMs: 30_000,
          });
        }
      }
    });
    ws.on('close', () => {
      if (app !== undefined) apps.get(app)?.delete(ws);
    });
    ws.on('error', () => ws.terminate());
  });
  await once(wss, 'listening');

  // demotion and sweep: the only pass over every key, once a second
  const sweep = setInterval(() => {
    for (const key of windows.sweep(Date.now())) for (const app of apps.keys()) broadcast(app, { type: 'demote', key });
  }, 1000);
  sweep.unref();

  const port = (wss.address() as { port: number }).port;
  return {
    url: `ws://127.0.0.1:${port}`,
    port,
    stats: () => ({ records, frames, keys: windows.size, promotions, deliveries, clients: wss.clients.size }),
    async close() {
      clearInterval(sweep);
      for (const ws of wss.clients) ws.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
