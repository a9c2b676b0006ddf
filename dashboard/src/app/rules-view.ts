/**
 * Rules per app: a JSON editor validated as you type with the hub's own parseRules (errors inline,
 * naming the field), a preview of the parsed rules, and Save (PUT, admin token). The hub
 * validates again; its 400 answer is shown the same way, and nothing changes on a refused save.
 */
import { REPLICA_DEFAULTS, type Rule } from '@hotkey/sdk/rules';
import { api, ApiError, appPath, listOf } from './api.ts';
import { decodeRouteArg } from './route-arg.ts';
import { el, setText } from './element.ts';
import type { FeedState } from './feed-state.ts';
import { checkRulesText, rulesToText } from './rules-text.ts';
import { askToken } from './token-dialog.ts';
import { toast } from './toast.ts';
import type { View } from './view.ts';

const FIELDS = [
  'match',
  'threshold',
  'windowMs',
  'hotMs',
  'cacheTtlMs',
  'cache',
  'demoteRatio',
  'demoteWindows',
] as const;
const HEADINGS = [...FIELDS, 'mode', 'pre-declared hot'];

/** A rule's detection mode and its knobs, in one cell. */
function modeText(r: Rule): string {
  const limit = r.limit !== undefined ? `, limit ${r.limit}/s` : '';
  const copies =
    !r.cache && r.replicas !== false
      ? `, replicas ≤ ${(r.replicas ?? REPLICA_DEFAULTS).max} (${(r.replicas ?? REPLICA_DEFAULTS).perNodeQps}/s per node)`
      : '';
  const sampled = `${r.sampleRate !== undefined ? `, sampled ${r.sampleRate}` : ''}${limit}${copies}`;
  if (r.mode === 'baseline')
    return `baseline ×${r.factor}${r.sigma ? ` or +${r.sigma}σ` : ''}, ≥ ${r.minQps}/s, ${r.baselineWindows} windows${sampled}`;
  if (r.mode === 'topk') return `top ${r.k}, ≥ ${r.minQps}/s${sampled}`;
  return `fixed${sampled}`;
}

/** A pre-declared window as the page shows it, with a badge while it is open. */
function windowCell(from: number | undefined, until: number | undefined): HTMLElement {
  if (from === undefined || until === undefined) return el('td', { class: 'muted' }, '—');
  const now = Date.now();
  const state = now >= until ? 'ended' : now >= from ? 'hot now' : 'scheduled';
  return el(
    'td',
    { class: 'mono', 'data-testid': 'predeclared-window' },
    el('span', { class: `badge ${state === 'hot now' ? 'hot' : ''}` }, state),
    ` ${new Date(from).toLocaleString()} → ${new Date(until).toLocaleString()}`,
  );
}

export class RulesView implements View {
  readonly element: HTMLElement;
  readonly #state: FeedState;
  readonly #app: HTMLInputElement;
  readonly #apps: HTMLDataListElement;
  readonly #editor: HTMLTextAreaElement;
  readonly #error: HTMLElement;
  readonly #preview: HTMLTableSectionElement;
  readonly #save: HTMLButtonElement;
  readonly #status: HTMLElement;
  #loaded = '';
  #appsVersion = -1;

  constructor(state: FeedState) {
    this.#state = state;
    this.#app = el('input', {
      list: 'hk-rule-apps',
      placeholder: 'app',
      'aria-label': 'rules app',
      'data-testid': 'rules-app',
    });
    this.#apps = el('datalist', { id: 'hk-rule-apps' });
    this.#app.addEventListener('change', () => void this.#load());
    this.#editor = el('textarea', {
      spellcheck: false,
      rows: 18,
      'aria-label': 'rules JSON',
      'data-testid': 'rules-editor',
    });
    this.#editor.addEventListener('input', () => this.#check());
    this.#error = el('div', { class: 'inline-error', role: 'alert', 'data-testid': 'rules-error' });
    this.#preview = el('tbody');
    this.#save = el(
      'button',
      { class: 'primary', onclick: () => void this.#saveRules(), 'data-testid': 'rules-save' },
      'Save',
    );
    this.#status = el('span', { class: 'muted', 'data-testid': 'rules-status' });
    this.element = el(
      'section',
      { class: 'view rules-view' },
      el(
        'div',
        { class: 'toolbar' },
        el('label', {}, 'App '),
        this.#app,
        this.#apps,
        el('button', { onclick: () => void this.#load() }, 'Load'),
        el('span', { class: 'grow' }),
        this.#status,
        this.#save,
      ),
      el(
        'div',
        { class: 'rules-grid' },
        el(
          'div',
          { class: 'panel' },
          el('h3', {}, 'Rules (JSON)'),
          el(
            'p',
            { class: 'muted' },
            'A list of {match, threshold, windowMs, hotMs, cacheTtlMs, cache, demoteRatio, demoteWindows}, optionally mode ("baseline": factor, sigma, minQps, baselineWindows; "topk": k, minQps), sampleRate, limit (accesses/s per key, cluster-wide), replicas ({perNodeQps, factor, max} or false, for cache: false), and a pre-declared hot window hotFrom / hotUntil (ISO 8601). Most specific match wins; [] means the default rule (every key, 1000 per second).',
          ),
          this.#editor,
          this.#error,
        ),
        el(
          'div',
          { class: 'panel' },
          el('h3', {}, 'As the hub will read them'),
          el(
            'table',
            { class: 'grid-table' },
            el('thead', {}, el('tr', {}, ...HEADINGS.map((f) => el('th', {}, f)))),
            this.#preview,
          ),
        ),
      ),
    );
  }

  show(arg: string[]): void {
    // a malformed address falls back to the app in the picker, as if none were named
    const app = (arg[0] ? decodeRouteArg(arg[0]) : undefined) ?? (this.#app.value || this.#state.apps[0] || '');
    if (app !== this.#app.value || this.#loaded !== app) {
      this.#app.value = app;
      if (app) void this.#load();
    }
  }
  hide(): void {}

  render(): void {
    if (this.#appsVersion === this.#state.versions.apps) return;
    this.#appsVersion = this.#state.versions.apps;
    this.#apps.replaceChildren(...this.#state.apps.map((a) => el('option', { value: a })));
    if (!this.#app.value && this.#state.apps[0]) {
      this.#app.value = this.#state.apps[0];
      void this.#load();
    }
  }

  async #load(): Promise<void> {
    const app = this.#app.value.trim();
    if (!app) return;
    setText(this.#status, 'loading…');
    try {
      const body = await api.get(appPath(app, 'rules'));
      this.#loaded = app;
      this.#editor.value = rulesToText(listOf(body, 'rules') as Rule[]);
      setText(this.#status, `rules of ${app} as stored on the hub`);
    } catch (err) {
      setText(this.#status, '');
      this.#error.replaceChildren(
        el('strong', {}, `Cannot load rules of ${app} — `),
        err instanceof ApiError ? `${err.code}: ${err.message}` : String(err),
      );
      return;
    }
    this.#check();
  }

  #check(): Rule[] | undefined {
    const result = checkRulesText(this.#editor.value);
    if (!result.ok) {
      this.#showError(`${result.field}: ${result.message.replace(`${result.field}: `, '')}`);
      this.#save.disabled = true;
      return undefined;
    }
    this.#error.replaceChildren();
    this.#editor.classList.remove('invalid');
    this.#save.disabled = false;
    this.#preview.replaceChildren(
      ...result.rules.map((r) =>
        el(
          'tr',
          {},
          ...FIELDS.map((f) => el('td', { class: 'mono' }, String(r[f]))),
          el('td', { class: 'mono', 'data-testid': 'rule-mode' }, modeText(r)),
          windowCell(r.hotFrom, r.hotUntil),
        ),
      ),
    );
    if (result.rules.length === 0)
      this.#preview.append(
        el('tr', {}, el('td', { colspan: HEADINGS.length, class: 'muted' }, 'no rules: the default rule applies')),
      );
    return result.rules;
  }

  #showError(message: string): void {
    this.#error.replaceChildren(el('strong', {}, 'Not saved — '), message);
    this.#editor.classList.add('invalid');
  }

  async #saveRules(): Promise<void> {
    const app = this.#app.value.trim();
    const rules = this.#check();
    if (!app || !rules) return;
    // send what the user wrote, not the parsed copy: the hub must judge the same input
    const raw: unknown = JSON.parse(this.#editor.value);
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const body = await api.put(appPath(app, 'rules'), raw);
        const saved = listOf(body, 'rules') as Rule[];
        if (saved.length || Array.isArray(raw)) this.#editor.value = rulesToText(saved.length ? saved : rules);
        this.#check();
        setText(this.#status, `saved ${new Date().toLocaleTimeString()} — live on every hub`);
        toast(`Rules of ${app} saved`);
        return;
      } catch (err) {
        if (
          err instanceof ApiError &&
          err.isAuth &&
          attempt === 0 &&
          (await askToken('admin', `saving rules needs the admin token (${err.message})`))
        )
          continue;
        const message =
          err instanceof ApiError
            ? `${err.field ? `${err.field}: ` : ''}${err.message.replace(`${err.field}: `, '')} (${err.code})`
            : String(err);
        this.#showError(message);
        setText(this.#status, 'refused by the hub');
        return;
      }
    }
  }
}
