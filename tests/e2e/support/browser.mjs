// Debian's chromium under Playwright, headless, with a fresh profile per
// launch (Playwright's own temporary user data dir, removed on close).

import { existsSync } from 'node:fs';
import { chromium } from 'playwright-core';

export const chromiumPath = process.env.CHROMIUM || '/usr/bin/chromium';

// extraArgs: more Chromium flags, e.g. --host-resolver-rules to give a
// made-up name the loopback address (a DNS rebinding, without DNS).
export async function launchBrowser(extraArgs = []) {
  if (!existsSync(chromiumPath)) {
    throw new Error(`${chromiumPath} is missing: scripts/bootstrap installs Debian's chromium`);
  }
  return chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      ...extraArgs,
    ],
  });
}

// A page's console errors and uncaught exceptions, for failure messages and
// for asserting the page ran clean.
export function collectPageErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    if (m.type() === 'error') errors.push(`console: ${m.text()}`);
  });
  return errors;
}
