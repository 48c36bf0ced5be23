import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** One `control-plane ...` line of docs/cli.md, as the CLI would receive it. */
export interface DocExample {
  line: string;
  argv: string[];
  env: Record<string, string>;
}

const DOC = join(__dirname, '..', '..', '..', 'docs', 'cli.md');

/**
 * Every command the doc's sh blocks show, with `[a | b]` run once per alternative and other
 * `[...]` as if given; comments and `> file` redirections are left out.
 */
export function cliDocExamples(): DocExample[] {
  const blocks = [...readFileSync(DOC, 'utf8').matchAll(/```sh\n([\s\S]*?)```/g)].map((m) => m[1]!);
  return blocks
    .flatMap((block) => block.split('\n'))
    .map((line) => line.replace(/\s+#.*$/, '').replace(/\s+>\s*\S+$/, ''))
    .flatMap(alternatives)
    .map(example)
    .filter((e): e is DocExample => e !== undefined);
}

function alternatives(line: string): string[] {
  const choice = /\[([^[\]|'"]*)\|([^[\]'"]*)\]/.exec(line);
  if (choice)
    return [choice[1]!, choice[2]!].flatMap((alt) => alternatives(line.replace(choice[0], alt.trim())));
  return [line.replace(/\[([^[\]'"]*)\]/g, '$1')];
}

function example(line: string): DocExample | undefined {
  const words = [...line.matchAll(/'([^']*)'|"([^"]*)"|(\S+)/g)].map((m) => m[1] ?? m[2] ?? m[3]!);
  const env: Record<string, string> = {};
  while (words[0] && /^[A-Z_]+=/.test(words[0])) {
    const [name, ...value] = words.shift()!.split('=');
    env[name!] = value.join('=');
  }
  if (words.shift() !== 'control-plane') return undefined;
  return { line, argv: words, env };
}
