/**
 * Promote or invalidate a key by hand (POST /api/apps/:app/promote|invalidate, admin token). On an
 * auth refusal the page asks for the admin token and tries once more.
 */
import { api, ApiError, appPath } from './api.ts';
import { el } from './element.ts';
import { askToken } from './token-dialog.ts';
import { toast } from './toast.ts';

export type KeyAction = 'promote' | 'invalidate';

export class KeyActions {
  readonly #apps: () => string[];

  constructor(apps: () => string[]) {
    this.#apps = apps;
  }

  async run(action: KeyAction, app: string, key: string): Promise<boolean> {
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        await api.post(appPath(app, action), { key });
        toast(`${action === 'promote' ? 'Promoted' : 'Invalidated'} ${app} / ${key}`);
        return true;
      } catch (err) {
        if (err instanceof ApiError && err.isAuth && attempt === 0) {
          if (await askToken('admin', `${action} needs the admin token (${err.message})`)) continue;
          toast(`${action} refused: ${err.message}`, 'error');
          return false;
        }
        toast(`${action} failed: ${err instanceof ApiError ? `${err.code}: ${err.message}` : String(err)}`, 'error');
        return false;
      }
    }
    return false;
  }

  /** app + key fields with Promote / Invalidate buttons, for keys not in the table. */
  toolbar(): HTMLElement {
    const app = el('input', {
      placeholder: 'app',
      list: 'hk-apps',
      size: 10,
      'aria-label': 'action app',
      'data-testid': 'action-app',
    });
    const key = el('input', { placeholder: 'key', size: 18, 'aria-label': 'action key', 'data-testid': 'action-key' });
    const list = el('datalist', { id: 'hk-apps' });
    app.addEventListener('focus', () => list.replaceChildren(...this.#apps().map((a) => el('option', { value: a }))));
    const go = (action: KeyAction) => () => {
      if (app.value.trim() === '' || key.value === '') return toast('give an app and a key', 'error');
      void this.run(action, app.value.trim(), key.value);
    };
    return el(
      'form',
      { class: 'actions', onsubmit: (ev: Event) => ev.preventDefault() },
      app,
      list,
      key,
      el('button', { type: 'button', onclick: go('promote'), 'data-testid': 'action-promote' }, 'Promote'),
      el('button', { type: 'button', onclick: go('invalidate'), 'data-testid': 'action-invalidate' }, 'Invalidate'),
    );
  }
}
