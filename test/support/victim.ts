// A bystander app for attack tests: a container app in its own namespace that
// must keep serving its last good version and keep applying its edits while
// another tenant attacks. Its edits change scaling.maxScale only, so each one
// is a new generation the operator must observe and apply without a new
// revision to wait for.
import assert from 'node:assert/strict';
import type { ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';
import { app, applyApp, getKsvc, knativeReady, readyTrue, waitForApp } from './apps.ts';
import { SETTLE_MS } from './wait.ts';

const READY_MS = 150_000;

export class Victim {
  readonly namespace: string;
  readonly name: string;
  private maxScale = 2;
  private stable = '';

  constructor(namespace: string, name = 'victim') {
    this.namespace = namespace;
    this.name = name;
  }

  private spec(): ServerlessApp['spec'] {
    return { container: { image: 'ghcr.io/victim/web:1' }, scaling: { minScale: 0, maxScale: this.maxScale } };
  }

  /** Creates the app and waits until it serves. */
  async start(): Promise<this> {
    await applyApp(app(this.namespace, this.name, this.spec()));
    const a = await waitForApp(this.namespace, this.name, readyTrue, `victim ${this.namespace}/${this.name} Ready`, READY_MS);
    this.stable = a.status!.versions!.stable!.version;
    return this;
  }

  /** Asserts it still serves its version, then edits it and waits until the operator has applied the edit. */
  async servesAndAppliesItsNextEdit(): Promise<void> {
    assert.ok(knativeReady(await getKsvc(this.namespace, this.name)), 'the victim\'s Knative Service is still Ready');
    this.maxScale++;
    const { metadata } = await applyApp(app(this.namespace, this.name, this.spec()));
    const a = await waitForApp(this.namespace, this.name, (x) => readyTrue(x) && x.status?.scaling?.maxScale === this.maxScale,
      `victim applies its edit (generation ${metadata.generation}, maxScale ${this.maxScale})`, SETTLE_MS);
    assert.equal(a.status!.versions!.stable!.version, this.stable, 'the victim serves the same version');
  }
}
