import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { INVALIDATION_HEADS, isCommand, PatternCounter, RespCommandReader } from './resp-counter.ts';

const encode = (...args: string[]) =>
  Buffer.from(`*${args.length}\r\n${args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('')}`);

function commandsOf(chunks: Buffer[]): string[] {
  const seen: string[] = [];
  const reader = new RespCommandReader((name, key) => seen.push(`${name.toString()} ${key?.toString() ?? '-'}`));
  for (const c of chunks) reader.feed(c);
  return seen;
}

test('reads every command, whatever the chunk boundaries', () => {
  const stream = Buffer.concat([
    encode('GET', 'item:flash'),
    encode('multi'),
    encode('CLIENT', 'CACHING', 'yes'),
    encode('get', 'k\r\n:1'),
    encode('PTTL', 'k'),
    encode('EXEC'),
    encode('SET', 'item:1', 'x'.repeat(300)),
  ]);
  const expected = ['GET item:flash', 'multi -', 'CLIENT CACHING', 'get k\r\n:1', 'PTTL k', 'EXEC -', 'SET item:1'];
  assert.equal(commandsOf([stream]), expected);
  for (let cut = 1; cut < stream.length; cut += 7)
    assert.equal(commandsOf([stream.subarray(0, cut), stream.subarray(cut)]), expected, `cut at ${cut}`);
  assert.equal(commandsOf([...stream].map((b) => Buffer.from([b]))), expected, 'one byte at a time');
});

test('inline commands and command names in any case', () => {
  assert.equal(commandsOf([Buffer.from('PING\r\nget a\r\n')]), ['PING -', 'get a']);
  assert.ok(isCommand(Buffer.from('gEt'), 'get'));
  assert.not.ok(isCommand(Buffer.from('getex'), 'get'));
  assert.not.ok(isCommand(Buffer.from('gex'), 'get'));
});

test('a stream that is not RESP is refused, not miscounted', () => {
  const reader = new RespCommandReader(() => undefined);
  assert.throws(() => reader.feed(Buffer.from('*1\r\n:5\r\n')), /bulk string/);
});

test('counts invalidation pushes, RESP3 and RESP2, split anywhere', () => {
  const resp3 = Buffer.from('>2\r\n$10\r\ninvalidate\r\n*1\r\n$6\r\nitem:1\r\n');
  const resp2 = Buffer.from('*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$6\r\nitem:2\r\n');
  // the subscription's confirmation names the channel too, but is not an invalidation
  const subscribed = Buffer.from('*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n');
  const stream = Buffer.concat([subscribed, resp3, Buffer.from('$3\r\nabc\r\n'), resp2, resp3, resp2]);
  for (let cut = 0; cut <= stream.length; cut++) {
    const counter = new PatternCounter(INVALIDATION_HEADS);
    counter.feed(stream.subarray(0, cut));
    counter.feed(stream.subarray(cut));
    assert.is(counter.count, 4, `cut at ${cut}`);
  }
  const bytewise = new PatternCounter(INVALIDATION_HEADS);
  for (const b of stream) bytewise.feed(Buffer.from([b]));
  assert.is(bytewise.count, 4);
});

test.run();
