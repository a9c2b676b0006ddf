/**
 * Debian's headless Chromium driven by playwright-core, with a fresh profile per launch and no
 * network beyond loopback. Every page records what a user would notice: console errors, page
 * errors, failed or refused requests, and every URL it asked for (to prove no token is in one).
 */
import { mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { within } from '../support/wait.ts';

export const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));

export interface WatchedPage {
  page: Page;
  /** console errors, page errors and failed requests, in order */
  problems: string[];
  /** every request URL the page made */
  urls: string[];
}

export class Chromium {
  readonly #context: BrowserContext;
  readonly #profile: string;

  private constructor(context: BrowserContext, profile: string) {
    this.#context = context;
    this.#profile = profile;
  }

  /**
   * A Chromium for an E2e file's fixture: launched within 40 s and closed (within 20 s) when the
   * fixture closes, before its clients and hub.
   */
  static async launchFor(fixture: { defer(cleanup: () => unknown): void }): Promise<Chromium> {
    const browser = await within('chromium launch', Chromium.launch(), 40_000);
    fixture.defer(() => within('chromium to close', browser.close(), 20_000));
    return browser;
  }

  /** @param [opts.args] extra Chromium flags, e.g. `--ignore-certificate-errors-spki-list=<hash>` to trust one test certificate */
  static async launch(opts: { args?: string[] } = {}): Promise<Chromium> {
    const profile = mkdtempSync(join(tmpdir(), 'hotkey-chromium-'));
    // a fresh --user-data-dir: playwright passes it for a persistent context
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: '/usr/bin/chromium',
      timeout: 30_000,
      viewport: { width: 1440, height: 900 },
      acceptDownloads: true,
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-quic',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        ...(opts.args ?? []),
      ],
    });
    context.setDefaultTimeout(10_000);
    mkdirSync(ARTIFACTS, { recursive: true });
    return new Chromium(context, profile);
  }

  /** A new tab (its own sessionStorage), watched for problems. */
  async open(
    url: string,
    opts: { expectStatus?: (url: string, status: number) => boolean } = {},
  ): Promise<WatchedPage> {
    const page = await this.#context.newPage();
    const problems: string[] = [];
    const urls: string[] = [];
    page.on('console', (m) => {
      if (m.type() !== 'error') return;
      // Chromium logs every 4xx answer to fetch; those the test expects are not problems
      const status = /responded with a status of (\d+)/.exec(m.text())?.[1];
      if (status !== undefined && (opts.expectStatus?.(m.location().url, Number(status)) ?? false)) return;
      problems.push(`console: ${m.text()} (${m.location().url})`);
    });
    page.on('pageerror', (e) => problems.push(`pageerror: ${e.message}`));
    page.on('request', (r) => urls.push(r.url()));
    page.on('requestfailed', (r) => problems.push(`requestfailed: ${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('response', (r) => {
      if (r.status() >= 400 && !(opts.expectStatus?.(r.url(), r.status()) ?? false))
        problems.push(`HTTP ${r.status()}: ${r.url()}`);
    });
    await page.goto(url, { waitUntil: 'load' });
    return { page, problems, urls };
  }

  async close(): Promise<void> {
    await this.#context.close();
    rmSync(this.#profile, { recursive: true, force: true });
  }
}
