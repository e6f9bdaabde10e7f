import assert from 'node:assert/strict';
import { versionAtLeast } from './version.ts';

describe('versionAtLeast', () => {
  const cases: Array<[string, string, boolean]> = [
    ['1.21.1', '1.21', true],
    ['v1.21.0', '1.21', true],
    ['1.20.9', '1.21', false],
    ['2.0', '1.21', true],
    ['1', '1.21', false],
    ['devel', '1.21', false],
    ['', '1.21', false],
    ['24.5.0', '24.5', true],
    ['24.4.1', '24.5', false],
    ['22.19.0', '22.19', true],
    ['v20.20.2', '22.19', false],
    ['1.21.0-rc.1', '1.21', true],
  ];
  for (const [version, minimum, atLeast] of cases) {
    it(`${JSON.stringify(version)} is ${atLeast ? '' : 'not '}${minimum} or later`, () => assert.equal(versionAtLeast(version, minimum), atLeast));
  }
});
