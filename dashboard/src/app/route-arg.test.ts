import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeRouteArg } from './route-arg.ts';

test('valid escapes decode; malformed ones give undefined instead of throwing', () => {
  assert.is(decodeRouteArg('item%3A42'), 'item:42');
  assert.is(decodeRouteArg('caf%C3%A9'), 'café');
  assert.is(decodeRouteArg(''), '');
  assert.is(decodeRouteArg('%'), undefined);
  assert.is(decodeRouteArg('%zz'), undefined);
  assert.is(decodeRouteArg('%E0%A4%A'), undefined);
  assert.is(decodeRouteArg('%C3'), undefined);
});

test.run();
