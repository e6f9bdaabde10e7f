// The largest apps a tenant can submit, for the memory benchmark and the
// "Large apps crash the operator for everyone" test: the largest the operator
// reads (a spec just under MAX_APP_SPEC_BYTES, many env entries, so both
// objects and strings count) and the largest the CRD admits (the finding's:
// 41 env values of 32 KiB, about 1.3 MiB, under etcd's 1.5 MiB per object),
// which the operator refuses for its size without parsing it.
import { MAX_APP_SPEC_BYTES, type ServerlessApp } from '../../src/api/v1alpha1/serverlessapp.ts';

const ENTRIES = 200;

function containerApp(namespace: string, name: string, env: Array<{ name: string; value: string }>): ServerlessApp {
  return {
    apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp',
    metadata: { name, namespace },
    spec: { container: { image: `registry.example.com/large/${name}:1`, port: 8080, env }, scaling: { minScale: 0, maxScale: 1 } },
  };
}

/** A spec of MAX_APP_SPEC_BYTES less at most 64 bytes: served, and the most of it the operator keeps. */
export function largestReadApp(namespace: string, name: string): ServerlessApp {
  const bare = containerApp(namespace, name, Array.from({ length: ENTRIES }, (_, i) => ({ name: `VAR_${i}`, value: '' })));
  const spare = MAX_APP_SPEC_BYTES - 64 - Buffer.byteLength(JSON.stringify(bare.spec));
  const each = Math.floor(spare / ENTRIES);
  // Unlike values, so the strings are the app's own (nothing interned or shared between apps).
  const env = bare.spec.container!.env!.map((e, i) => ({ ...e, value: `${name}-${i}-`.padEnd(each, 'v') }));
  return containerApp(namespace, name, env);
}

/** About 1.3 MiB: what the CRD admits and the operator refuses for its size. */
export function largestAdmittedApp(namespace: string, name: string): ServerlessApp {
  return containerApp(namespace, name, Array.from({ length: 41 }, (_, i) => ({ name: `BIG_${i}`, value: `${name}-${i}-`.padEnd(32_768, 'x') })));
}
