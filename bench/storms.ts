// The noisy namespace's storms (issue 34), each a round of writes the noisy
// phase repeats without pause while the victim edits:
//   - worst-case: the worst-case apps applied, then metadata-only edits (the
//     storm the bench always had, bench/noisy-neighbour.ts worstCaseApp);
//   - expensive-edits: each edit brings 16 new header regexes (each its 1/16
//     of the RE2 budget) and 16 windows in time zones no edit used before, so
//     no validation cache helps: 100-300 ms of validation each, unbounded;
//   - label-storm: label-only patches of large apps (env values near the
//     CRD's bounds, as large as the API server admits): no reconcile, but each
//     watch event is parsed in full;
//   - refused-models: many model apps the operator refuses (a service account
//     the platform does not allow), re-applied with a new storage URI each round.
// `prepare` makes what the storm writes to (dry runs first: a storm the API
// server or the operator refuses outright would measure only the refusal).
import type { ServerlessApp } from '../src/api/v1alpha1/serverlessapp.ts';
import { re2ProgramSizeBound } from '../src/api/v1alpha1/regex-cost.ts';
import { MAX_REGEX_PROGRAM_SIZE, validateApp } from '../src/api/v1alpha1/validation.ts';
import { parseConfig, validationPolicy } from '../src/config.ts';
import type { KubeClient } from '../src/runtime/client.ts';
import { Kinds } from '../src/util/kinds.ts';
import { benchApp, benchModelApp, forEachBounded, imageOf, type AppRef } from './workload.ts';

export const STORMS = ['worst-case', 'expensive-edits', 'label-storm', 'refused-models'] as const;
export type StormName = (typeof STORMS)[number];

export interface StormSizes {
  /** Apps the worst-case and expensive-edit storms edit. */
  noisyApps: number;
  /** Large apps the label storm patches. */
  largeApps: number;
  /** Refused model apps. */
  refusedModels: number;
}

export interface Storm {
  name: StormName;
  /** What the phase's table says the noisy namespace did. */
  describe: string;
  /** One round of the storm; returns how many writes it made. */
  round(): Promise<number>;
}

const zones = Intl.supportedValuesOf('timeZone');

/** 16 regexes no earlier round used, each its 1/16 of the app's RE2 budget (a Unicode class and a counted repetition). */
function freshRegexes(round: number): string[] {
  return Array.from({ length: 16 }, (_, k) => {
    const regex = (n: number) => `^x-${round}-${k}-\\pL[a-z]{${n}}$`;
    let n = 1;
    while (re2ProgramSizeBound(regex(n + 1)) <= MAX_REGEX_PROGRAM_SIZE / 16) n++;
    return regex(n);
  });
}

/** An edit no validation cache has seen: new regexes, and 16 yearly windows in the next 16 time zones. */
export function expensiveApp(ref: AppRef, round: number): ServerlessApp {
  return benchApp(ref, imageOf(ref, 1), {
    // Header rules need a route of the app's own (the API server refuses them without spec.ingress).
    ingress: { hosts: [`${ref.name}.${ref.namespace}.example.com`] },
    rollout: { match: freshRegexes(round).map((regex) => ({ header: 'x-user', regex })) },
    scaling: {
      minScale: 0, maxScale: 10, target: 100,
      windows: Array.from({ length: 16 }, (_, k) => ({ name: `w-${k}`, schedule: `${k} 3 1 1 *`, duration: '1h', minScale: 1, timeZone: zones[(round * 16 + k) % zones.length]! })),
    },
  });
}

/** An app with `values` env values of `bytes` each. */
function largeApp(ref: AppRef, values: number, bytes: number): ServerlessApp {
  const app = benchApp(ref, imageOf(ref, 1));
  app.spec.container!.env = Array.from({ length: values }, (_, i) => ({ name: `BIG_${i}`, value: String.fromCharCode(97 + (i % 26)).repeat(bytes) }));
  return app;
}

/** A model app the operator refuses (ServiceAccountNotAllowed: the bench's operator allows none). */
export function refusedModelApp(ref: AppRef, round: number): ServerlessApp {
  const app = benchModelApp(ref);
  app.spec.model!.storageUri = `gs://bench-models/${ref.name}/${round}`;
  app.spec.model!.serviceAccountName = 'not-allowed';
  return app;
}

const labelsOnly = (ref: AppRef, value: string) => ({ apiVersion: 'serverlessapp.io/v1alpha1', kind: 'ServerlessApp', metadata: { name: ref.name, namespace: ref.namespace, labels: { storm: value } } });

export async function prepareStorm(name: StormName, client: KubeClient, namespace: string, sizes: StormSizes, worstCase: (ref: AppRef, round: number) => ServerlessApp, log: (line: string) => void): Promise<Storm> {
  const policy = validationPolicy(parseConfig([], {}));
  const refs = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => ({ namespace, name: `${prefix}-${i}` }));
  let round = 0;
  switch (name) {
    case 'worst-case': {
      const apps = refs('heavy', sizes.noisyApps);
      return {
        name, describe: `${apps.length} worst-case apps applied (a spec change every third round), then 10 label edits of each`,
        round: async () => {
          round++;
          await forEachBounded(apps, 4, (r) => client.apply(worstCase(r, Math.floor(round / 3))));
          for (let k = 0; k < 10; k++) {
            // Its own field manager: an apply of the labels alone by the spec's manager would drop the spec.
            await forEachBounded(apps, 4, (r) => client.apply(labelsOnly(r, `${round}-${k}`), { fieldManager: 'bench-storm' }));
          }
          return apps.length * 11;
        },
      };
    }
    case 'expensive-edits': {
      const apps = refs('costly', sizes.noisyApps);
      await client.apply(expensiveApp(apps[0]!, 0), { dryRun: true });
      const problems = validateApp(expensiveApp(apps[0]!, 0), policy);
      if (problems.length) throw new Error(`the operator refuses the expensive edit: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}`);
      return {
        name, describe: `${apps.length} apps, each edit with 16 new regexes and 16 windows in new time zones`,
        round: async () => {
          round++;
          await forEachBounded(apps, 4, (r) => client.apply(expensiveApp(r, round)));
          return apps.length;
        },
      };
    }
    case 'label-storm': {
      const apps = refs('large', sizes.largeApps);
      // As large as the API server admits: 41 values of 32 KiB (the issue's 1.3 MiB), halved until a dry run passes.
      let values = 41;
      for (;;) {
        try {
          await client.apply(largeApp(apps[0]!, values, 32_768), { dryRun: true });
          break;
        } catch (err) {
          if (values <= 1) throw err;
          values = Math.floor(values / 2);
        }
      }
      log(`label storm: ${apps.length} apps of ${values} env values of 32 KiB (${Math.round((values * 32_768) / 1024)} KiB each)`);
      await forEachBounded(apps, 4, (r) => client.apply(largeApp(r, values, 32_768)));
      return {
        name, describe: `label-only patches of ${apps.length} apps of ${Math.round((values * 32_768) / 1024)} KiB`,
        round: async () => {
          round++;
          await forEachBounded(apps, 4, (r) => client.mergePatch(Kinds.ServerlessApp, namespace, r.name, { metadata: { labels: { storm: String(round) } } }));
          return apps.length;
        },
      };
    }
    case 'refused-models': {
      const apps = refs('refused', sizes.refusedModels);
      if (!validateApp(refusedModelApp(apps[0]!, 0), policy).some((p) => p.reason === 'ServiceAccountNotAllowed')) throw new Error('the refused model app is not refused by the operator');
      return {
        name, describe: `${apps.length} model apps the operator refuses (ServiceAccountNotAllowed), re-applied with a new storage URI each round`,
        round: async () => {
          round++;
          await forEachBounded(apps, 16, (r) => client.apply(refusedModelApp(r, round)));
          return apps.length;
        },
      };
    }
  }
}
