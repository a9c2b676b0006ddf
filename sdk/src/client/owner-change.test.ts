import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MsgType } from '../wire/protocol.ts';
import { ProtocolPeer } from '../../../test/support/protocol-peer.ts';
import { waitFor } from '../../../test/support/wait.ts';
import { closeAll, closeLater, connect } from '../../../test/support/sdk-client.ts';
import { P } from '../../../test/support/client-fixture.ts';

test.after.each(closeAll);

test("a Demote from a hub that no longer vouches for the key leaves the new owner's promotion hot", async () => {
  const b = await new ProtocolPeer({ id: 'hub-b' }).listen();
  const bSocketP = b.nextSocket();
  const s = await connect(
    {},
    {
      members: (self) => [
        { id: 'hub-a', url: self },
        { id: 'hub-b', url: b.url },
      ],
    },
  );
  closeLater(s.hk, b);
  const bSock = await bSocketP;
  await waitFor('both hubs welcomed', () => s.hk.hubs().length === 2);
  // the old owner (hub-a) promoted it; the new owner (hub-b) promotes it too, then hub-a lets go
  s.sock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  await waitFor('k hot from hub-a', () => s.hk.isHot('k'));
  bSock.send({ t: MsgType.Promote, seq: 1, key: 'k', ...P });
  // hub-b's Applied proves its Promote was applied (frames of one socket apply in order)
  bSock.send({ t: MsgType.Invalidate, seq: 2, key: 'other' });
  await bSock.next(MsgType.Applied);
  const demotes: string[] = [];
  s.hk.on('demote', (key, info) => demotes.push(`${key} ${info.hub}`));
  s.sock.send({ t: MsgType.Demote, seq: 2, key: 'k' });
  s.sock.send({ t: MsgType.Invalidate, seq: 3, key: 'other' });
  await s.sock.next(MsgType.Applied);
  assert.ok(s.hk.isHot('k'), 'still hot: hub-b vouches for it');
  assert.equal(demotes, []);
  bSock.send({ t: MsgType.Demote, seq: 3, key: 'k' });
  await waitFor('hub-b demotes it', () => !s.hk.isHot('k'));
  assert.equal(demotes, ['k hub-b']);
  await closeAll();
});

test.run();
