import assert from 'node:assert/strict';
import { escapeTerminal, escapeTerminalDeep } from './terminal-text.ts';

describe('text from the cluster on a terminal', () => {
  it('escapes ESC and CR as kubectl does, and the other control characters as \\xNN; newlines and tabs stay', () => {
    assert.equal(escapeTerminal('revision failed:\x1b]0;pwned\x07 \x1b[2J\r\nnext\tline\x9b31m'), 'revision failed:^[]0;pwned\\x07 ^[[2J\\r\nnext\tline\\x9b31m');
  });

  it('leaves text without control characters as it is, Unicode included', () => {
    assert.equal(escapeTerminal('✔ ready → 50% «shop»'), '✔ ready → 50% «shop»');
  });

  it('escapes every string of an object, keys and numbers left alone', () => {
    assert.deepEqual(escapeTerminalDeep({ conditions: [{ message: 'a\x1b[31m', observedGeneration: 2 }] }), { conditions: [{ message: 'a^[[31m', observedGeneration: 2 }] });
  });
});
