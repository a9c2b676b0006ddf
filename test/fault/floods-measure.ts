/**
 * Prints the flood figures (floods.ts) for a hub checkout, one fresh hub process per attack:
 *
 *   node --conditions=@hotkey/source --import tsx test/fault/floods-measure.ts [--hub-bin PATH] [--only promote,invalidate,frames,evict,evict-many]
 *
 * `--hub-bin` runs another checkout's CLI (e.g. main's hub/bin/hotkey-hub.js) to compare.
 */
import { parseArgs } from 'node:util';
import { HubProcess } from '../support/hub-process.ts';
import { floodHubArgs, measureAttack, type AttackMode } from './floods.ts';

const { values } = parseArgs({
  options: { 'hub-bin': { type: 'string' }, only: { type: 'string' }, seconds: { type: 'string' } },
});
const modes = (values.only ?? 'promote,invalidate,frames,evict,evict-many').split(',') as AttackMode[];
for (const mode of modes) {
  const hub = await HubProcess.start({
    args: floodHubArgs(mode),
    bin: values['hub-bin'],
  });
  try {
    const f = await measureAttack(hub, mode, { attackSeconds: Number(values.seconds ?? 6) });
    console.log(JSON.stringify(f));
  } finally {
    await hub.stop('SIGKILL');
  }
}
