// The rule of scheduling-policy.ts (schedulingProblems) as CEL, for the chart's
// ValidatingAdmissionPolicy: the API server refuses a toleration, a node pin or
// a cross-namespace pod (anti-)affinity term the platform does not allow when
// the app is written, instead of the operator reporting Ready=False
// SchedulingNotAllowed after it was admitted. Generated from the same
// constants by `npm run generate`; the chart adds only the platform's three
// settings, as the variables below. Fields are named down to the toleration
// or term (the operator names the key within a node term too).
import type { PolicyExpressions } from './pod-metadata-policy.ts';
import { NAMESPACE_NAME_LABEL, NODE_NAME_FIELD, NODE_PINNING_KEYS } from './scheduling-policy.ts';

/** The chart's variables: a CEL list of taint keys ("*" for any), and two booleans. */
export const SCHEDULING_VARIABLES = { tolerationKeys: 'allowedTolerationKeys', nodePinning: 'allowNodePinning', crossNamespace: 'allowCrossNamespacePodAffinity' } as const;

const WORKLOADS = ['container', 'model'] as const;
const celList = (xs: readonly string[]) => `[${xs.map((x) => JSON.stringify(x)).join(', ')}]`;
const v = (name: string) => `variables.${name}`;

/** `list` filtered by `pred` (over `x`), each kept item named `field[i]<suffix>`; `list` is a variable, so indexOf finds the item's place. */
const namedItems = (list: string, pred: string, field: string, suffix = `''`) =>
  `${v(list)}.filter(x, ${pred}).map(x, '${field}[' + string(${v(list)}.indexOf(x)) + ']' + ${suffix})`;

/** termStaysInNamespace(term, request.namespace) negated: namespaces other than the app's, or a selector other than its own name label. */
const leavesNamespace = (t: string) =>
  `(${t}.?namespaces.orValue([]).exists(n, n != request.namespace) || (has(${t}.namespaceSelector) && !(${t}.namespaceSelector.?matchExpressions.orValue([]).size() == 0 && ${t}.namespaceSelector.?matchLabels.orValue({}).size() == 1 && ${JSON.stringify(NAMESPACE_NAME_LABEL)} in ${t}.namespaceSelector.?matchLabels.orValue({}) && ${t}.namespaceSelector.matchLabels[${JSON.stringify(NAMESPACE_NAME_LABEL)}] == request.namespace)))`;

/** A node selector term that names one node: a pinning label in matchExpressions or the node name in matchFields. */
const pinsNode = (t: string) =>
  `(${t}.?matchExpressions.orValue([]).exists(e, e.key in variables.nodePinningKeys) || ${t}.?matchFields.orValue([]).exists(f, f.key == ${JSON.stringify(NODE_NAME_FIELD)}))`;

export function schedulingPolicy(): PolicyExpressions {
  const variables: PolicyExpressions['variables'] = [{ name: 'nodePinningKeys', expression: celList(NODE_PINNING_KEYS) }];
  const lists = (w: string, name: string, path: string) => {
    variables.push({ name: `${w}${name}`, expression: `object.spec.?${w}${path}.orValue([])` });
    return `${w}${name}`;
  };
  const refused = { tolerations: [] as string[], pins: [] as string[], terms: [] as string[] };
  for (const w of WORKLOADS) {
    const base = `spec.${w}`;
    const tolerations = lists(w, 'Tolerations', '.?tolerations');
    refused.tolerations.push(namedItems(tolerations, `!has(x.key) || x.key == '' || !(x.key in ${v(SCHEDULING_VARIABLES.tolerationKeys)})`, `${base}.tolerations`, `(has(x.key) && x.key != '' ? '.key' : '')`));

    const na = `${base}.affinity.nodeAffinity`;
    const required = lists(w, 'RequiredNodeTerms', '.?affinity.?nodeAffinity.?requiredDuringSchedulingIgnoredDuringExecution.?nodeSelectorTerms');
    const preferred = lists(w, 'PreferredNodeTerms', '.?affinity.?nodeAffinity.?preferredDuringSchedulingIgnoredDuringExecution');
    refused.pins.push(
      `object.spec.?${w}.?nodeSelector.orValue({}).filter(k, k in variables.nodePinningKeys).map(k, '${base}.nodeSelector["' + k + '"]')`,
      namedItems(required, pinsNode('x'), `${na}.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms`),
      namedItems(preferred, pinsNode('x.preference'), `${na}.preferredDuringSchedulingIgnoredDuringExecution`, `'.preference'`),
    );

    for (const which of ['podAffinity', 'podAntiAffinity'] as const) {
      const kind = which[0]!.toUpperCase() + which.slice(1);
      const req = lists(w, `Required${kind}Terms`, `.?affinity.?${which}.?requiredDuringSchedulingIgnoredDuringExecution`);
      const pref = lists(w, `Preferred${kind}Terms`, `.?affinity.?${which}.?preferredDuringSchedulingIgnoredDuringExecution`);
      refused.terms.push(
        namedItems(req, leavesNamespace('x'), `${base}.affinity.${which}.requiredDuringSchedulingIgnoredDuringExecution`),
        namedItems(pref, leavesNamespace('x.podAffinityTerm'), `${base}.affinity.${which}.preferredDuringSchedulingIgnoredDuringExecution`, `'.podAffinityTerm'`),
      );
    }
  }
  variables.push(
    { name: 'refusedTolerations', expression: `${v(SCHEDULING_VARIABLES.tolerationKeys)}.exists(k, k == '*') ? [] : ${refused.tolerations.join(' + ')}` },
    { name: 'refusedNodePins', expression: `${v(SCHEDULING_VARIABLES.nodePinning)} ? [] : ${refused.pins.join(' + ')}` },
    { name: 'refusedPodTerms', expression: `${v(SCHEDULING_VARIABLES.crossNamespace)} ? [] : ${refused.terms.join(' + ')}` },
  );
  const is = (list: string) => `(${v(list)}.size() == 1 ? ' is' : ' are')`;
  return {
    variables,
    validations: [
      {
        expression: 'variables.refusedTolerations.size() == 0',
        messageExpression: `variables.refusedTolerations.join(', ') + ${is('refusedTolerations')} + ${JSON.stringify(' not allowed on this platform: a toleration lets pods onto nodes tainted to keep others off (the control plane, other teams\' dedicated nodes), and one with no key tolerates every taint; allowed taint keys (the chart\'s scheduling.allowedTolerationKeys): ')} + (${v(SCHEDULING_VARIABLES.tolerationKeys)}.size() == 0 ? '(none)' : ${v(SCHEDULING_VARIABLES.tolerationKeys)}.join(', '))`,
        reason: 'Invalid',
      },
      {
        expression: 'variables.refusedNodePins.size() == 0',
        messageExpression: `variables.refusedNodePins.join(', ') + ${is('refusedNodePins')} + ${JSON.stringify(` not allowed on this platform: ${NODE_PINNING_KEYS.join(', ')} and the node field ${NODE_NAME_FIELD} pin the pods to one named node, which is the platform's call (the chart's scheduling.allowNodePinning); select nodes by what they offer instead, e.g. a GPU or zone label`)}`,
        reason: 'Invalid',
      },
      {
        expression: 'variables.refusedPodTerms.size() == 0',
        messageExpression: `variables.refusedPodTerms.join(', ') + (variables.refusedPodTerms.size() == 1 ? ' selects' : ' select') + ' pods outside namespace ' + request.namespace + ${JSON.stringify(' (namespaces, or a namespaceSelector; {} is every namespace), which is not allowed on this platform (the chart\'s scheduling.allowCrossNamespacePodAffinity): (anti-)affinity to other namespaces\' pods can keep their pods off nodes or show where they run. Leave namespaces and namespaceSelector unset for the app\'s own namespace')}`,
        reason: 'Invalid',
      },
    ],
  };
}
