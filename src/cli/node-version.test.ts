import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleCli } from '../../scripts/bundle-cli.ts';
import { MINIMUM_NODE, olderThan } from './node-version.ts';

describe('the Node.js the kubectl plugin needs', () => {
  const cases: Array<[string, string, boolean]> = [
    ['20.20.2', '22.19', true],
    ['v20.20.2', '22.19', true],
    ['22.18.9', '22.19', true],
    ['22.19.0', '22.19', false],
    ['22.20.0', '22.19', false],
    ['24.1.0', '22.19', false],
    ['23.0.0', '22.19', false],
  ];
  for (const [version, minimum, older] of cases) {
    it(`${version} is ${older ? '' : 'not '}older than ${minimum}`, () => assert.equal(olderThan(version, minimum), older));
  }

  it('is the one package.json states', () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { engines: { node: string } };
    assert.equal(pkg.engines.node, `>=${MINIMUM_NODE}`);
  });

  // The machine image's Debian node (20) is what a shell finds first on PATH here: the plugin as built must name what it needs.
  it('the plugin as built, run by an older node, says which Node.js it needs', async function () {
    const old = '/usr/bin/node';
    const version = spawnSync(old, ['--version'], { encoding: 'utf8' }).stdout?.trim();
    if (!version || !olderThan(version, MINIMUM_NODE)) this.skip(); // no older node on this machine to run it with
    this.timeout(60_000);
    // Under the repository (node_modules/.cache): its package.json makes the .js files ES modules, as for dist/.
    const cache = fileURLToPath(new URL('../../node_modules/.cache', import.meta.url));
    mkdirSync(cache, { recursive: true });
    const dir = mkdtempSync(join(cache, 'kubectl-sapp-old-node-'));
    try {
      await bundleCli(dir);
      const run = spawnSync(old, [join(dir, 'kubectl-sapp.js'), 'plan', 'shop'], { encoding: 'utf8' });
      assert.equal(run.status, 1, run.stderr);
      assert.equal(run.stderr, `error: kubectl sapp needs Node.js ${MINIMUM_NODE} or later; ${old} is ${version}\n`);
      // The same file on this node runs the plugin (its help), so the check is what stopped the old one.
      assert.match(execFileSync(process.execPath, [join(dir, 'kubectl-sapp.js'), '--help'], { encoding: 'utf8' }), /kubectl sapp/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
