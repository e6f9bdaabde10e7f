// Golden files, the one helper every test uses: compare a rendering with its
// committed file. A missing or different file fails, in every environment, so
// a test can never pass by writing its own expectation. UPDATE_GOLDEN=1
// rewrites the files that differ (or are missing) and still fails, naming
// them, so an update is always a run to review and then a run that passes.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';

/** A string is compared as it is; anything else as its YAML rendering. */
export function goldenText(value: unknown): string {
  return typeof value === 'string' ? value : stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
}

export function assertGolden(path: string | URL, value: unknown, env: NodeJS.ProcessEnv = process.env): void {
  const file = typeof path === 'string' ? path : fileURLToPath(path);
  const text = goldenText(value);
  const expected = existsSync(file) ? readFileSync(file, 'utf8') : undefined;
  if (expected === text) return;
  if (env['UPDATE_GOLDEN'] === '1') {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, text);
    assert.fail(`golden file ${file} ${expected === undefined ? 'written' : 'rewritten'} (UPDATE_GOLDEN=1): review the diff, then run again without UPDATE_GOLDEN`);
  }
  if (expected === undefined) assert.fail(`golden file ${file} is missing; UPDATE_GOLDEN=1 writes it (then review it and commit it)`);
  assert.equal(text, expected, `${file} differs (UPDATE_GOLDEN=1 rewrites it after an intended change)`);
}
