/**
 * The hub's periodic work on one app (hub-core.ts calls it every `tickMs` for each app): windows
 * age and hot keys cool, pushed values and rate splits move on, pre-declared windows open
 * and close, leases lapse, and an app nobody uses any more is let go. Beside it, the sampling of
 * the hot keys' QPS into the history.
 */
import { isLegacy } from './membership/legacy-sessions.ts';
import { limitFrames } from './broadcast/frames.ts';
import type { Announcer } from './broadcast/announce.ts';
import type { Apps, AppState } from './apps.ts';
import type { QpsHistory, QpsSample } from './observe/qps-history.ts';

/** One tick of `app` at `now`. */
export function tickApp(apps: Apps, app: AppState, now: number): void {
  app.aggregator.tick(now);
  app.shares.tick(now);
  app.savings.roll(now, (key) => app.aggregator.isHot(key));
  if (app.limits.active) sendShares(app, now);
  if (app.aggregator.transitionDue(now)) apps.scheduleConfig(app); // a pre-declared window opened or closed
  apps.settle(app); // leases lapse with time: fencing needs no message
  // an app nobody is connected to frees its place and its keys after a grace period (open
  // mode: junk app names leave, so a real app refused with 4011 gets in on its retry); not
  // while a closed session's lease may still run
  if (app.lingering.size === 0 && apps.idle(app, now)) apps.drop(app);
}

/** Each session's changed (or due) rate splits, in one Limit frame per session. */
function sendShares(app: AppState, now: number): void {
  app.limits.tick(now, (session, keys, rates) => {
    if (isLegacy(session)) return; // a version-1 SDK cannot read a Limit: its keys go unlimited there
    for (const frame of limitFrames(keys, rates)) if (!app.broadcaster.sendTo(session.peer, frame)) return;
  });
}

/**
 * Samples every app's hot keys into `history` (a key no longer hot is read from its window while
 * the aggregator still tracks it, else 0); a hot key of a rule that does not cache has its
 * current step re-announced.
 */
export function sampleHistory(apps: Apps, history: QpsHistory, announcer: Announcer, now: number): void {
  const hot: QpsSample[] = [];
  for (const app of apps.values())
    for (const v of app.aggregator.hot(now)) {
      hot.push({ app: app.name, key: v.key, qps: v.qps });
      if (!v.rule.cache) announcer.restepped(app, v, now);
    }
  history.sample(now, hot, (appName, key) => apps.get(appName)?.aggregator.qps(key, now) ?? 0);
}
