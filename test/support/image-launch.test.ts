import assert from 'node:assert/strict';
import { imageLaunch } from './image-launch.ts';

describe('imageLaunch', () => {
  it('reads the node flags of the runtime stage\'s ENTRYPOINT and its NODE_OPTIONS', () => {
    const dockerfile = [
      'FROM build AS build',
      'ENV NODE_OPTIONS=--inspect',
      'ENTRYPOINT ["node", "--wrong", "dist/main.js"]',
      'FROM runtime',
      'ENV NODE_OPTIONS="--max-semi-space-size=2 --max-old-space-size=256"',
      'ENTRYPOINT ["/nodejs/bin/node", "--lite-mode", \\',
      '            "dist/main.js"]',
    ].join('\n');
    assert.deepEqual(imageLaunch(dockerfile), { nodeArgs: ['--lite-mode'], nodeOptions: '--max-semi-space-size=2 --max-old-space-size=256' });
  });

  it('reads the repository\'s Dockerfile, which runs dist/main.js', () => {
    const launch = imageLaunch();
    assert.ok(launch.nodeArgs.every((arg) => arg.startsWith('--')), JSON.stringify(launch));
  });

  it('refuses an ENTRYPOINT that does not run dist/main.js', () => {
    assert.throws(() => imageLaunch('FROM x\nENTRYPOINT ["node", "main.js"]'), /does not run dist\/main.js/);
  });
});
