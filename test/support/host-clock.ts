/**
 * One clock for every process on this host, in milliseconds: CLOCK_MONOTONIC, which Linux keeps
 * system-wide. Times taken in different processes (a write's ack in one, a read's start in another)
 * compare exactly. `performance.timeOrigin + performance.now()` does not: each process samples the
 * wall clock once at start-up, so an NTP step or slew between two starts (a freshly booted CI
 * machine) puts their clocks milliseconds apart.
 */
export const hostNow = (): number => Number(process.hrtime.bigint()) / 1e6;
