/**
 * The dashboard page: header (tabs, live status, token), one view per tab chosen by the URL hash,
 * the live feed and the render loop. Feed frames only update the model; the loop redraws the open
 * view at most RENDER_EVERY_MS, so a burst of frames or 10 000 rows costs a few redraws a second.
 */
import type { FeedMessage } from '@hotkey/sdk/feed-protocol';
import './styles.css';
import { ClusterView } from './cluster-view.ts';
import { el, setText } from './element.ts';
import { EventsView } from './events-view.ts';
import { FeedState } from './feed-state.ts';
import { formatQps } from './format.ts';
import { HistoryView } from './history-view.ts';
import { HotView } from './hot-view.ts';
import { KeyActions } from './key-actions.ts';
import { KeyView } from './key-view.ts';
import { LOAD_SPARK_POINTS } from './sparkline.ts';
import { LiveConnection, type LiveState } from './live-connection.ts';
import { QpsSeries } from './qps-series.ts';
import { rowId } from './row-id.ts';
import { RulesView } from './rules-view.ts';
import { askToken } from './token-dialog.ts';
import { getToken } from './token-store.ts';
import type { View } from './view.ts';

const RENDER_EVERY_MS = 250;
const SAMPLE_EVERY_MS = 1000;

const state = new FeedState();
const series = new QpsSeries();
/** loads/s per hot key for the key detail's sparkline: a minute, bounded like the QPS series */
const loadSeries = new QpsSeries({ capacity: LOAD_SPARK_POINTS });
const actions = new KeyActions(() => state.apps);

const views: Record<string, { label: string; view: View; tab: boolean }> = {
  hot: { label: 'Hot keys', view: new HotView(state, series, actions, loadSeries), tab: true },
  key: { label: 'Key', view: new KeyView(state, series, actions, loadSeries), tab: false },
  events: { label: 'Events', view: new EventsView(state), tab: true },
  cluster: { label: 'Cluster', view: new ClusterView(state), tab: true },
  rules: { label: 'Rules', view: new RulesView(state), tab: true },
  history: { label: 'History', view: new HistoryView(state), tab: true },
};

const liveBadge = el('span', { class: 'live-badge', 'data-testid': 'live-state' }, 'connecting');
const summary = el('span', { class: 'summary', 'data-testid': 'summary' });
const tokenButton = el('button', { class: 'ghost', 'data-testid': 'token-button' }, 'Admin token');
tokenButton.addEventListener('click', () => void askToken('admin').then(updateTokenButton));
function updateTokenButton(): void {
  setText(tokenButton, getToken('admin') ? 'Admin token ✓' : 'Admin token');
}
const tabs = Object.entries(views)
  .filter(([, v]) => v.tab)
  .map(([id, v]) => el('a', { href: `#/${id}`, class: 'tab', 'data-view': id }, v.label));
const main = el('main', {});
document.body.append(
  el(
    'header',
    {},
    el('div', { class: 'brand' }, el('span', { class: 'logo' }), 'hotkey'),
    el('nav', {}, ...tabs),
    summary,
    el('span', { class: 'grow' }),
    liveBadge,
    tokenButton,
  ),
  main,
);
for (const v of Object.values(views)) {
  v.view.element.hidden = true;
  main.append(v.view.element);
}
updateTokenButton();

let current: View | undefined;
function route(): void {
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const id = parts[0] && views[parts[0]] ? parts[0] : 'hot';
  const next = views[id]!.view;
  if (current && current !== next) {
    current.hide();
    current.element.hidden = true;
  }
  current = next;
  next.element.hidden = false;
  next.show(parts.slice(1));
  for (const t of tabs)
    t.classList.toggle('active', t.dataset.view === id || (id === 'key' && t.dataset.view === 'hot'));
  next.render(Date.now());
}
addEventListener('hashchange', route);

function onLiveState(s: LiveState): void {
  liveBadge.className = `live-badge ${s.type}`;
  if (s.type === 'live') setText(liveBadge, `live · ${s.hub}`);
  else if (s.type === 'connecting') setText(liveBadge, 'connecting…');
  else if (s.type === 'down') setText(liveBadge, `reconnecting in ${Math.ceil(s.retryInMs / 1000)} s`);
  else {
    setText(liveBadge, 'token needed');
    void askToken('read', s.message).then((saved) => saved && live.connect());
  }
}
const live = new LiveConnection({ onFrame: (msg: FeedMessage) => state.apply(msg), onState: onLiveState });

// sampling runs on a timer, not in the animation loop, so a background tab keeps its history
setInterval(() => {
  series.sample(
    Date.now(),
    (function* (): Generator<[string, number]> {
      for (const row of state.rows.values()) yield [rowId(row.app, row.key), row.qps];
    })(),
  );
  loadSeries.sample(
    Date.now(),
    (function* (): Generator<[string, number]> {
      for (const row of state.rows.values())
        if (row.loadsPerSec !== undefined) yield [rowId(row.app, row.key), row.loadsPerSec];
    })(),
  );
}, SAMPLE_EVERY_MS);

let lastRender = 0;
function frame(now: number): void {
  requestAnimationFrame(frame);
  if (now - lastRender < RENDER_EVERY_MS) return;
  lastRender = now;
  const wall = Date.now();
  let top = 0;
  for (const row of state.rows.values()) if (row.qps > top) top = row.qps;
  setText(
    summary,
    `${state.hotTotal} hot · top ${formatQps(top)} qps · ${state.hubs.length} hub${state.hubs.length === 1 ? '' : 's'}`,
  );
  current?.render(wall);
}

route();
live.connect();
requestAnimationFrame(frame);
