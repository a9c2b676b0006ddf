/**
 * Asks for a token in a modal dialog (password field), stores it with token-store. Used when the
 * hub refuses a read (dashboard token) or a write (admin token), and from the header button.
 */
import { el } from './element.ts';
import { getToken, setToken, type TokenKind } from './token-store.ts';

const LABEL: Record<TokenKind, string> = {
  admin: 'Admin token (for rule edits and actions)',
  read: 'Dashboard token (for reading)',
};

/** Resolves true when the user saved a token, false when they cancelled. */
export function askToken(kind: TokenKind, reason = ''): Promise<boolean> {
  return new Promise((resolve) => {
    const input = el('input', {
      type: 'password',
      autocomplete: 'off',
      'aria-label': LABEL[kind],
      'data-testid': `token-input-${kind}`,
      value: getToken(kind),
    });
    const dialog = el(
      'dialog',
      { class: 'token-dialog', 'data-testid': 'token-dialog' },
      el(
        'form',
        { method: 'dialog' },
        el('h3', {}, LABEL[kind]),
        reason ? el('p', { class: 'error', 'data-testid': 'token-reason' }, reason) : null,
        el(
          'p',
          { class: 'muted' },
          'Kept in this tab only (sessionStorage); sent in the Authorization header, never in a URL.',
        ),
        input,
        el(
          'div',
          { class: 'buttons' },
          el('button', { value: 'clear', type: 'submit' }, 'Forget'),
          el('button', { value: 'cancel', type: 'submit' }, 'Cancel'),
          el('button', { value: 'save', type: 'submit', class: 'primary', 'data-testid': 'token-save' }, 'Save'),
        ),
      ),
    );
    dialog.addEventListener('close', () => {
      const choice = dialog.returnValue;
      if (choice === 'save') setToken(kind, input.value.trim());
      if (choice === 'clear') setToken(kind, '');
      dialog.remove();
      resolve(choice === 'save');
    });
    document.body.append(dialog);
    dialog.showModal();
    input.focus();
  });
}
