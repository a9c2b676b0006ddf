/** Short notices in a corner: action results and errors that belong to no form. */
import { el } from './element.ts';

let host: HTMLElement | undefined;

export function toast(message: string, kind: 'ok' | 'error' = 'ok', ms = 4000): void {
  if (!host) {
    host = el('div', { class: 'toasts', role: 'status', 'aria-live': 'polite' });
    document.body.append(host);
  }
  const item = el('div', { class: `toast ${kind}`, 'data-testid': `toast-${kind}` }, message);
  host.append(item);
  // bounded: a burst of failures must not fill the screen
  while (host.childElementCount > 5) host.firstElementChild?.remove();
  setTimeout(() => item.remove(), ms);
}
