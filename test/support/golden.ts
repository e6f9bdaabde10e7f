// Golden files: compare an object with its committed YAML rendering; run with
// UPDATE_GOLDEN=1 to rewrite them after an intended change (and review the diff).
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { stringify } from 'yaml';

export function assertGolden(path: string, value: unknown): void {
  const text = stringify(value, { lineWidth: 0, aliasDuplicateObjects: false });
  if (process.env.UPDATE_GOLDEN === '1' || !existsSync(path)) {
    if (process.env.CI && !existsSync(path)) assert.fail(`golden file ${path} is missing; run UPDATE_GOLDEN=1 locally`);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
    return;
  }
  assert.equal(text, readFileSync(path, 'utf8'), `${path} differs (UPDATE_GOLDEN=1 rewrites it after an intended change)`);
}
