import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';

describe('scratch directories', () => {
  it('exist while the test process runs and are gone once it exits', () => {
    const module = new URL('./scratch.ts', import.meta.url).href;
    const script = `import { scratchDir } from ${JSON.stringify(module)}; import { existsSync, writeFileSync } from 'node:fs';
      const dir = scratchDir('scratch-test-'); writeFileSync(dir + '/f', 'x'); console.log(dir, existsSync(dir + '/f'));`;
    const [dir, existed] = execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' }).trim().split(' ');
    assert.equal(existed, 'true', 'the directory and its file existed in the process');
    assert.equal(existsSync(dir!), false, `${dir} was removed at exit`);
  });
});
