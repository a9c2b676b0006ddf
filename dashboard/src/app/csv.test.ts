import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { csvField, toCsv } from './csv.ts';

test('plain fields pass; commas, quotes and newlines are quoted with quotes doubled', () => {
  assert.is(csvField('item:1'), 'item:1');
  assert.is(csvField(12.5), '12.5');
  assert.is(csvField(undefined), '');
  assert.is(csvField('a,b'), '"a,b"');
  assert.is(csvField('say "hi"'), '"say ""hi"""');
  assert.is(csvField('line1\nline2'), '"line1\nline2"');
  assert.is(csvField('cr\r'), '"cr\r"');
});

test('formula-looking strings are defused, numbers are not', () => {
  assert.is(csvField('=HYPERLINK("x")'), `"'=HYPERLINK(""x"")"`);
  assert.is(csvField('+1'), "'+1");
  assert.is(csvField('@cmd'), "'@cmd");
  assert.is(csvField(-3), '-3');
});

test('fields with ; or = are quoted, so a semicolon-locale spreadsheet cannot split off a formula cell', () => {
  assert.is(csvField('a;=1+1'), '"a;=1+1"');
  assert.is(csvField('k=v'), '"k=v"');
  assert.is(csvField('x;y'), '"x;y"');
  assert.is(csvField('a;"b'), '"a;""b"');
});

test('a document has a header and CRLF line ends', () => {
  assert.is(
    toCsv(
      ['app', 'key', 'qps'],
      [
        ['shop', 'a,b', 3],
        ['feed', 'x', 0],
      ],
    ),
    'app,key,qps\r\nshop,"a,b",3\r\nfeed,x,0\r\n',
  );
  assert.is(toCsv(['a'], []), 'a\r\n');
});

test.run();
