import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { client, startAppliance, type TestAppliance } from '../helpers/appliance.js';
import { launchChromium, watchedPage } from '../helpers/chromium.js';
import { type RunningProcess, runCli, runGatehouse } from '../helpers/process.js';
import { accessPointsDependency } from './fixtures.js';

// A plugin whose manifest is written as the contract shows one (docs/plugins.md "callApi"): its
// top-level `permissions` are a device capability (`camera`), its dependency lists its own
// `view_access_points` / `manage_access_points`. In Chromium, through `gatehouse plugin dev`: the
// dependency is called and subscribed (the appliance decides with the token), and a venue of 16
// gates shows 16, not the appliance's first page of 15.

const A = '/api/v1/projects/default/default';

const APP = `<script setup lang="ts">
import { usePluginStore } from '@gatehouse/plugin-toolkit';
import { computed, onMounted, ref } from 'vue';

const store = usePluginStore();
const gates = ref<Array<{ id: number; name: string }>>([]);
const error = ref('');
const changed = ref('');
const channel = computed(() => Object.values(store.connection.channels)[0]?.state ?? 'none');
store.onEvent<{ name: string }>('AccessPointUpdated', (gate) => (changed.value = gate.name));
onMounted(async () => {
  try {
    gates.value = await store.callApi('access-points.index', 'access_points');
  } catch (err) {
    error.value = (err as Error).message;
  }
});
</script>

<template>
  <main>
    <h1>Gates</h1>
    <p data-testid="count">{{ gates.length }}</p>
    <p data-testid="error">{{ error }}</p>
    <p data-testid="channel">{{ channel }}</p>
    <p data-testid="changed">{{ changed }}</p>
  </main>
</template>
`;

describe('a seed-style manifest in Chromium', () => {
  let gh: TestAppliance;
  let dir: string;
  let dev: RunningProcess;
  let browser: Browser;
  let page: Page;
  let errors: string[];
  let last: number;

  beforeAll(async () => {
    gh = await startAppliance();
    const token = await gh.token();
    const api = client(gh, token);
    const zone = (await api.post(`${A}/access-zones`, { name: 'Hall' })).body.data.id;
    for (let i = 1; i <= 16; i++)
      last = (await api.post(`${A}/access-points`, { name: `Gate ${i}`, access_zone_id: zone })).body.data.id;

    dir = join(mkdtempSync(join(tmpdir(), 'gh-seed-')), 'gates');
    const init = await runCli(['plugin', 'init', dir, '--yes'], {});
    expect(init.code, init.stderr).toBe(0);
    const manifest = {
      settings: {},
      strings: { default: {} },
      assets: {},
      triggerState: {},
      dependencies: [accessPointsDependency],
      permissions: ['camera'],
    };
    writeFileSync(join(dir, 'app-manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    writeFileSync(join(dir, 'src/App.vue'), APP);

    dev = runGatehouse(['plugin', 'dev', dir, '--url', gh.url, '--token', token, '--port', '0'], {});
    const url = (await dev.waitFor(/serving .* at (http:\/\/\S+)/, 60_000))[1]!;
    browser = await launchChromium();
    ({ page, errors } = await watchedPage(browser));
    await page.goto(url);
    await page.locator('h1').waitFor();
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await dev?.stop();
    await gh?.stop();
    if (dir) rmSync(join(dir, '..'), { recursive: true, force: true });
  });

  it('lists all 16 gates with callApi, though the manifest repeats none of the dependency permissions', async () => {
    await expect.poll(() => page.getByTestId('count').textContent(), { timeout: 15_000 }).toBe('16');
    expect(await page.getByTestId('error').textContent()).toBe('');
  });

  it("subscribes the dependency's events and hands an update over", async () => {
    await expect.poll(() => page.getByTestId('channel').textContent(), { timeout: 15_000 }).toBe('subscribed');
    await client(gh, await gh.token()).put(`${A}/access-points/${last}`, { name: 'Gate 16 (north)' });
    await expect.poll(() => page.getByTestId('changed').textContent(), { timeout: 10_000 }).toBe('Gate 16 (north)');
  });

  it('logged no console errors', () => {
    expect(errors).toEqual([]);
  });
});
