// The rule of pod-metadata.ts (controlKey, keyAllowed) as CEL, for the chart's
// ValidatingAdmissionPolicy: the API server refuses the write itself instead
// of the operator reporting Ready=False after it was admitted. Generated from
// the same constants by `npm run generate` (one place for the rule); the chart
// adds only the platform's allow-list, as the variable `allowedKeys`.
import { SELECTOR_LABELS } from './pod-metadata.ts';

export interface PolicyExpressions {
  variables: Array<{ name: string; expression: string }>;
  validations: Array<{ expression: string; messageExpression: string; reason: string }>;
}

/** The chart's variable holding the allow-list: a CEL list of strings, exact keys or "prefix/*". */
export const ALLOWED_KEYS_VARIABLE = 'allowedKeys';

const celList = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;

/** controlKey(k, kind) !== undefined, in CEL: every key with a prefix, and the selector labels. */
function controlKeyCel(k: string, kind: 'label' | 'annotation'): string {
  return kind === 'label' ? `(${k}.indexOf('/') >= 0 || ${k} in variables.selectorLabels)` : `${k}.indexOf('/') >= 0`;
}

/** keyAllowed(k, allowed), in CEL: an exact key, or "prefix/*" for every key under that prefix. */
const keyAllowedCel = (k: string) => `variables.${ALLOWED_KEYS_VARIABLE}.exists(a, a.endsWith('/*') ? ${k}.startsWith(a.substring(0, a.size() - 1)) : a == ${k})`;

export function podMetadataPolicy(): PolicyExpressions {
  const fields = (['container', 'model'] as const).flatMap((w) => ([['podLabels', 'label'], ['podAnnotations', 'annotation']] as const).map(([field, kind]) => ({
    // Each refused key as the field that holds it, spec.container.podLabels["app"], as the operator names it.
    name: `${w}${field[0]!.toUpperCase()}${field.slice(1)}`,
    expression: `object.spec.?${w}.?${field}.orValue({}).map(k, ${controlKeyCel('k', kind)} && !${keyAllowedCel('k')}, 'spec.${w}.${field}["' + k + '"]')`,
  })));
  const why = `a key with a prefix may be read as an order by whoever owns the prefix (the mesh, the kubelet, the network, an injector), so only the prefixes the platform lists reach the pod, and Istio and network policies select pods by the labels ${SELECTOR_LABELS.join(', ')}`;
  return {
    variables: [
      { name: 'selectorLabels', expression: celList(SELECTOR_LABELS) },
      ...fields,
      { name: 'refused', expression: fields.map((f) => `variables.${f.name}`).join(' + ') },
    ],
    validations: [{
      expression: 'variables.refused.size() == 0',
      messageExpression: `variables.refused.join(', ') + (variables.refused.size() == 1 ? ' is' : ' are') + ${JSON.stringify(` not allowed on this platform: ${why}; allowed control keys (the chart's allowedPodMetadataKeys): `)} + (variables.${ALLOWED_KEYS_VARIABLE}.size() == 0 ? '(none)' : variables.${ALLOWED_KEYS_VARIABLE}.join(', '))`,
      reason: 'Invalid',
    }],
  };
}
