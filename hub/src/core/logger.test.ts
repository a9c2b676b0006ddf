import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isLogLevel, loggerFromFunction } from './logger.ts';

test('a plain function sink gets warnings and errors as one line each', () => {
  const got: string[] = [];
  const logger = loggerFromFunction((m) => got.push(m));
  logger.info({ evt: 'promote' }, 'ignored at the default level');
  logger.warn({ evt: 'redis_down', url: 'redis://x:1' }, 'lost Redis');
  assert.equal(got, ['lost Redis evt=redis_down url=redis://x:1']);
});

test('log levels', () => {
  assert.ok(isLogLevel('debug'));
  assert.not.ok(isLogLevel('trace'));
  assert.not.ok(isLogLevel('INFO'));
});

test.run();
