/**
 * The rule editor's text: JSON in, validated rules or an inline error out. Uses the same
 * `parseRules` as the hub, so the page refuses exactly what the hub would refuse. Pure.
 */
import { parseRules, type Rule } from '@hotkey/sdk/rules';

export type RulesCheck = { ok: true; rules: Rule[] } | { ok: false; field: string; message: string };

/** Rules as the editor shows them: defaults included, so every knob is visible. */
export function rulesToText(rules: readonly Rule[]): string {
  return JSON.stringify(rules, null, 2);
}

export function checkRulesText(text: string): RulesCheck {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    return { ok: false, field: 'json', message: (err as Error).message };
  }
  try {
    return { ok: true, rules: parseRules(value) };
  } catch (err) {
    // ValidationError names the field; checked by shape because '@hotkey/sdk' (the Node client)
    // must stay out of the browser bundle.
    const field = (err as { field?: unknown }).field;
    return { ok: false, field: typeof field === 'string' ? field : 'rules', message: (err as Error).message };
  }
}
