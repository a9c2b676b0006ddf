// GETs of one key as the redis-server executed them, for the consumer programs of
// test/package/consumers.test.ts: they run at the same time against one redis-server, so its
// INFO commandstats counts every program's GETs; a MONITOR connection of its own sees each command
// with its key (https://redis.io/docs/latest/commands/monitor/).
//
//   const gets = await keyGets(REDIS_URL, client); … await gets.of('item:1'); … gets.close();
//
// `client` is any connected ioredis or node-redis client; `of` sends it an EXISTS of a fresh mark
// and answers once the monitor has shown the mark, so every command Redis ran before it is counted.
import { connect } from 'node:net';

const MARK_PREFIX = 'consumer:monitor:mark:';
const MARK_WAIT_MS = 5000;

export async function keyGets(redisUrl, client) {
  const socket = connect(Number(new URL(redisUrl).port), '127.0.0.1');
  socket.setEncoding('utf8');
  const gets = new Map();
  const marks = new Set();
  let tail = '';
  socket.on('data', (chunk) => {
    const lines = (tail + chunk).split('\r\n');
    tail = lines.pop();
    for (const line of lines) {
      const get = /"get" "([^"]*)"$/i.exec(line);
      if (get) gets.set(get[1], (gets.get(get[1]) ?? 0) + 1);
      const mark = /"exists" "([^"]*)"$/i.exec(line);
      if (mark?.[1].startsWith(MARK_PREFIX)) marks.add(mark[1]);
    }
  });
  await new Promise((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  socket.write('MONITOR\r\n');
  let sent = 0;
  const of = async (key) => {
    const mark = MARK_PREFIX + process.pid + ':' + sent++;
    const until = Date.now() + MARK_WAIT_MS;
    await client.exists(mark);
    while (!marks.has(mark)) {
      if (Date.now() > until) throw new Error(`MONITOR did not show ${mark} within ${MARK_WAIT_MS} ms`);
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    marks.delete(mark);
    return gets.get(key) ?? 0;
  };
  return { of, close: () => socket.destroy() };
}
