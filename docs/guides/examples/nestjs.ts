// A NestJS service whose items are cached with @nestjs/cache-manager: cache-manager over Keyv over
// @keyv/redis, whose node-redis client hotkey wraps. A hot item is answered from this instance's
// memory, and a PUT answers once every instance dropped its copy.
// Dependencies are named with @Inject(token): it runs under loaders that do not emit decorator
// metadata (tsx, esbuild, swc without it), with TypeScript's `experimentalDecorators` on.
//   PORT=3000 REDIS_URL=redis://127.0.0.1:6379 HOTKEY_HUB=ws://127.0.0.1:7070/ws node --import tsx nestjs.ts
import 'reflect-metadata';
import { HotKeyClient, withHotKeys } from '@hotkey/sdk/node-redis';
import KeyvRedis, { createClient } from '@keyv/redis';
import { CACHE_MANAGER, CacheModule } from '@nestjs/cache-manager';
import { Body, Controller, Get, Inject, Module, NotFoundException, Param, Put } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { Cache } from 'cache-manager';
import { Keyv } from 'keyv';

interface Item {
  id: string;
  price: number;
}

@Controller('items')
class ItemsController {
  constructor(@Inject(CACHE_MANAGER) private readonly cache: Cache) {}

  @Get(':id')
  async get(@Param('id') id: string): Promise<Item> {
    const item = await this.cache.get<Item>(`item:${id}`);
    if (!item) throw new NotFoundException();
    return item;
  }

  @Put(':id')
  async put(@Param('id') id: string, @Body() item: Item): Promise<Item> {
    await this.cache.set(`item:${id}`, item, 60_000);
    return item;
  }
}

@Module({ controllers: [ItemsController] })
class AppModule {
  static withStore(store: Keyv) {
    return { module: AppModule, imports: [CacheModule.register({ stores: [store] })] };
  }
}

const hk = new HotKeyClient({ app: 'shop', hubs: [process.env.HOTKEY_HUB ?? 'ws://127.0.0.1:7070/ws'] });
await hk.ready({ signal: AbortSignal.timeout(5000) });
const redis = withHotKeys(await createClient({ url: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' }).connect(), hk);
const app = await NestFactory.create(AppModule.withStore(new Keyv({ store: new KeyvRedis(redis) })));
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');

process.once('SIGTERM', async () => {
  await app.close(); // disconnects the cache's stores: the node-redis client too
  await hk.close();
});
