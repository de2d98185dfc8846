import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { configLeaves } from '../../src/config/overlay.js';

describe('docs/config.md', () => {
  it('documents every configuration key with its environment variable and flag', () => {
    const doc = readFileSync('docs/config.md', 'utf8');
    for (const leaf of configLeaves) {
      expect(doc, leaf.env).toContain(`| \`${leaf.path.join('.')}\` | \`${leaf.env}\` | \`--${leaf.flag}\` |`);
    }
  });
});
