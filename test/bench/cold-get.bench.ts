/**
 * The cold GET rows of the writecost benchmark on their own (cold-get.ts): CPU per GET of a key
 * that is not hot, wrapped ÷ plain, for ioredis and node-redis, 100 in flight, the two clients
 * alternated round by round, the SDK as tsc builds it. Seconds instead of writecost's minutes, for
 * work on the read path.
 *
 *   pnpm bench --only cold-get
 */
import { coldGets, coldRows, shippedSdk } from './cold-get.ts';
import { benchMain } from './harness.ts';

benchMain(async ({ quick }) => coldRows('cold GET', await coldGets(await shippedSdk(), quick ? 2 : 7)));
