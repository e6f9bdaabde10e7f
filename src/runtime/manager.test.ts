import assert from 'node:assert/strict';
import type { Controller } from './controller.ts';
import { RestConfig } from './kubeconfig.ts';
import type { Logger } from './logging.ts';
import { Manager } from './manager.ts';
import { waitIdle } from '../../test/support/idle.ts';

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {}, child: () => quiet } as unknown as Logger;
/** A registered controller that is never started: only its name and whether it is idle are read. */
const controller = (name: string, idle: () => boolean) => ({ name, isIdle: idle }) as unknown as Controller;

describe('Manager.busy, as waitIdle (test/support/idle.ts) waits on it', () => {
  let manager: Manager;
  beforeEach(() => {
    manager = new Manager({ kubeConfig: new RestConfig({ server: 'https://127.0.0.1:1' }), logger: quiet });
  });

  it('resolves once every controller is idle', async () => {
    let looks = 0;
    manager.add(controller('apps', () => ++looks > 3));
    await waitIdle(manager, 5_000);
    assert.ok(looks >= 5, `two idle looks in a row after three busy ones (${looks} looks)`);
  });

  it('gives up after its deadline, saying what it waited for and which controller is still busy', async () => {
    manager.add(controller('apps', () => true));
    manager.add(controller('model-caches', () => false));
    await assert.rejects(waitIdle(manager, 50),
      /^Error: timed out after 0 s waiting for the controllers to be idle \(nothing queued or running, every event written\); still busy: model-caches$/);
  });

  it('gives up at its deadline when an Event write never ends, saying so', async () => {
    manager.add(controller('apps', () => true));
    manager.events.flush = () => new Promise(() => {});
    await assert.rejects(waitIdle(manager, 50), /timed out after 0 s .*; still busy: the Event recorder, writing its queued Events$/);
  });
});
