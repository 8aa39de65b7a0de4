import { chromium, type Browser } from 'playwright-core';
import { findBinary } from './find-binary.js';

/**
 * Debian's chromium, driven headless by playwright-core (which downloads no browser). CI installs
 * it and sets KIWI_REQUIRE_CHROMIUM=1: there a missing browser fails instead of skipping.
 */
export function chromiumPath(): string | undefined {
  return findBinary('chromium', ['/usr/bin']) ?? findBinary('chromium-browser', ['/usr/bin']);
}

export function chromiumAvailable(): boolean {
  return chromiumPath() !== undefined || process.env['KIWI_REQUIRE_CHROMIUM'] === '1';
}

export async function launchChromium(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (executablePath === undefined) throw new Error('chromium is not installed: apt-get install chromium (KIWI_REQUIRE_CHROMIUM=1 makes this an error instead of a skip)');
  // --no-sandbox: CI runs as root, where chromium's own sandbox cannot start.
  return chromium.launch({ executablePath, headless: true, args: ['--no-sandbox', '--disable-dev-shm-usage'] });
}
