/**
 * The hub both value-push benchmarks start (push-loads.bench.ts for `hk.get`, push-wrapper.bench.ts
 * for the ioredis wrapper): two apps side by side in one run, `today` (each instance loads the key
 * when it turns hot and again when its value expires) and `push` (`push: true`).
 */
export const PUSH_TTL_MS = 1000;

export const PUSH_HUB = {
  threshold: 50,
  apps: {
    today: { cacheTtlMs: PUSH_TTL_MS, refreshAheadRatio: 1, staleIfErrorMs: 0 },
    push: { cacheTtlMs: PUSH_TTL_MS, push: true },
  },
};
