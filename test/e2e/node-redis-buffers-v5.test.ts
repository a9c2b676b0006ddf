/**
 * test/e2e/node-redis-buffers.test.ts's cases on node-redis v5 (redis@5, the test package's `redis5`):
 * the same file, imported after its node-redis functions are switched to v5's.
 */
import { useNodeRedis } from '../support/node-redis-lib.ts';

useNodeRedis(5);
await import('./node-redis-buffers.test.ts');
