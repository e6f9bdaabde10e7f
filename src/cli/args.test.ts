import assert from 'node:assert/strict';
import { parseCommandLine, UsageError } from './args.ts';

describe('kubectl sapp command line', () => {
  const parses: Array<[string[], object]> = [
    [['status', 'shop'], { command: { verb: 'status', watch: false }, name: 'shop' }],
    [['status', 'shop', '-w', '-n', 'demo'], { command: { verb: 'status', watch: true }, name: 'shop', namespace: 'demo' }],
    [['--namespace=demo', 'status', '--watch', 'shop'], { command: { verb: 'status', watch: true }, name: 'shop', namespace: 'demo' }],
    [['promote', 'shop', '--kubeconfig', '/tmp/kc', '--context', 'prod'], { command: { verb: 'promote' }, name: 'shop', kubeconfig: '/tmp/kc', context: 'prod' }],
    [['set-weight', 'shop', '20'], { command: { verb: 'set-weight', weight: 20 }, name: 'shop' }],
    [['set-weight', 'shop', '0'], { command: { verb: 'set-weight', weight: 0 }, name: 'shop' }],
    [['abort', 'shop'], { command: { verb: 'abort' }, name: 'shop' }],
    [['retry', 'shop'], { command: { verb: 'retry' }, name: 'shop' }],
    [['pause', 'shop'], { command: { verb: 'pause' }, name: 'shop' }],
    [['resume', 'shop'], { command: { verb: 'resume' }, name: 'shop' }],
    [[], { help: true }],
    [['status', '--help'], { help: true }],
    [['plan', '--help'], { help: true, topic: 'plan' }],
    [['plan', '-f', 'app.yaml'], { command: { verb: 'plan', file: 'app.yaml', output: 'text', operator: 'serverlessapp-system/serverlessapp-operator' }, name: '' }],
    [['plan', 'shop', '-o', 'json', '-n', 'demo'], { command: { verb: 'plan', output: 'json', operator: 'serverlessapp-system/serverlessapp-operator' }, name: 'shop', namespace: 'demo' }],
    [['plan', '-f', '-', '--operator', 'platform/sapp'], { command: { verb: 'plan', file: '-', output: 'text', operator: 'platform/sapp' }, name: '' }],
  ];
  for (const [argv, want] of parses) {
    it(`parses ${JSON.stringify(argv.join(' '))}`, () => assert.deepEqual(parseCommandLine(argv), want));
  }

  const refusals: Array<[string[], RegExp]> = [
    [['rollback', 'shop'], /^unknown command "rollback"; commands: status, promote, abort, retry, pause, resume, set-weight, plan$/],
    [['promote'], /^promote needs the name of a ServerlessApp$/],
    [['set-weight', 'shop'], /^set-weight needs a percentage/],
    [['set-weight', 'shop', '150'], /^set-weight takes a whole percentage from 0 to 100, not 150$/],
    [['set-weight', 'shop', '-5'], /^set-weight takes a whole percentage from 0 to 100, not -5$/],
    [['set-weight', 'shop', '20', '30'], /^unexpected argument 30$/],
    [['pause', 'shop', 'web'], /^unexpected argument web$/],
    [['pause', 'shop', '--watch'], /^--watch goes with status only$/],
    [['status', 'shop', '--colour'], /Unknown option '--colour'/],
    [['plan'], /^plan needs -f FILE \(the edited ServerlessApp\) or the NAME of a ServerlessApp$/],
    [['plan', 'shop', '-f', 'app.yaml'], /^plan takes -f FILE or NAME, not both/],
    [['plan', 'shop', '-o', 'yaml'], /^-o takes text or json, not "yaml"$/],
    [['plan', 'shop', '--operator', 'sapp'], /^--operator takes NAMESPACE\/NAME/],
    [['status', 'shop', '-o', 'json'], /^-o goes with plan only$/],
  ];
  for (const [argv, error] of refusals) {
    it(`refuses ${JSON.stringify(argv.join(' '))}, naming the mistake`, () => {
      assert.throws(() => parseCommandLine(argv), (err: Error) => err instanceof UsageError && error.test(err.message));
    });
  }
});
