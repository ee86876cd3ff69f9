// Every tool of `ctx mcp`, through the official TypeScript MCP client (@modelcontextprotocol/sdk).
//
// Run by scripts/mcp-clients, which installs the SDK and sets CTX_BIN (the ctx binary) and
// MCP_SDK_DIR (the SDK's package directory).
//
// A fixture workspace (a git repository with Rust, Python and Markdown files, a pack, and two
// recorded runs) is served by `ctx -C WS mcp --tools all --allow-write` over stdio. After
// tools/list, every tool is called with `client.callTool`, which checks structuredContent
// against the tool's outputSchema, failed calls included:
//
// - once with arguments that succeed: no exception, no isError, structuredContent present (every
//   ctx tool declares an outputSchema) and a text content;
// - with each of its failing arguments (a missing path, a path outside the workspace, a bad
//   enum value, a missing required argument, …): no exception from the SDK, isError true, a
//   text that is ctx's own message (not the SDK's -32602 "Structured content does not match the
//   tool's output schema"), naming the bad value or argument.
//
// CASES below holds the arguments per tool, read from each tool's inputSchema and its
// implementation in crates/ctx-mcp/src/tools: a tool that tools/list shows and CASES lacks
// (or the reverse) is a failure, so a new tool must be added here.
//
// An answer whose text and structuredContent both exceed 2,000 characters and carry the same
// large payload (a string of 200 characters or more) fails: one of them carries it.
//
// It prints a table (tool, success call, failing calls, text and structuredContent sizes of
// the success answer), the repeated payloads, then every failing check on one line, and
// exits 1 if there is any.

import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const ctxBin = process.env.CTX_BIN || join(repoRoot, 'target', 'debug', 'ctx');
const sdkDir =
  process.env.MCP_SDK_DIR || join(repoRoot, '.cache', 'mcp-clients', 'node_modules', '@modelcontextprotocol', 'sdk');
const sdk = (path) => import(pathToFileURL(join(sdkDir, 'dist', 'esm', path)).href);
const { Client } = await sdk('client/index.js');
const { StdioClientTransport } = await sdk('client/stdio.js');
const { CallToolResultSchema } = await sdk('types.js');

/** Answers whose text and structuredContent both pass this many characters are looked at. */
const LARGE = 2000;
/** A string in structuredContent at least this long that the text repeats is a payload. */
const PAYLOAD = 200;
const CALL_TIMEOUT_MS = 120_000;

// ------------------------------------------------------------------------------- the fixture

const LIB_RS = `//! The fixture library: small arithmetic helpers and a parser.

/// Parses words out of a line of text.
pub struct Parser {
    /// How deep nested brackets may go.
    pub depth: usize,
}

impl Parser {
    /// A parser that accepts \`depth\` levels of brackets.
    pub fn new(depth: usize) -> Self {
        Self { depth }
    }

    /// Splits \`line\` into words, dropping empty ones.
    pub fn words<'a>(&self, line: &'a str) -> Vec<&'a str> {
        line.split_whitespace().filter(|w| !w.is_empty()).collect()
    }
}

/// Adds one to \`x\`; the helper every other module uses.
pub fn helper(x: u32) -> u32 {
    x + 1
}

/// Adds two, by way of \`helper\`.
pub fn helper_twice(x: u32) -> u32 {
    helper(helper(x))
}

/// The sum of the first \`n\` numbers, computed the slow way on purpose.
pub fn triangle(n: u32) -> u32 {
    (1..=n).sum()
}
`;

const APP_PY = `"""The fixture application: greets people by name."""

import sys


class Greeter:
    """Greets people, politely or not."""

    def __init__(self, greeting="Hello"):
        self.greeting = greeting
        self.count = 0

    def greet(self, name):
        """Returns the greeting for \`name\` and counts it."""
        self.count += 1
        return f"{self.greeting}, {name}!"

    def greet_all(self, names):
        """Greets every name in turn."""
        return [self.greet(name) for name in names]


def main(argv):
    """Greets each name on the command line."""
    greeter = Greeter()
    for line in greeter.greet_all(argv[1:]):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
`;

const GUIDE_MD = `# Guide

This guide explains the fixture project: a Rust library with a \`Parser\` and arithmetic
helpers, and a Python application with a \`Greeter\` class.

## The helper

Call \`helper\` to add one to a number. \`helper_twice\` adds two by calling \`helper\` twice,
and \`triangle\` sums the first numbers. None of them can overflow in the tests, which use
small numbers only.

## The parser

\`Parser::new\` takes the depth of nested brackets it accepts; \`Parser::words\` splits a line
into its words and drops the empty ones. The parser keeps no state between lines, so one
parser can be shared by every caller.

## The greeter

\`Greeter\` greets people by name with its greeting ("Hello" unless told otherwise) and counts
how many greetings it gave. \`greet_all\` greets a list of names in turn, and \`main\` greets each
name given on the command line.
`;

const FILES = {
  '.gitignore': '/.ctx\n',
  'README.md':
    '# Demo\n\nThe fixture of the MCP client tests: a Rust library (src/lib.rs), a Python\n' +
    'application (src/app.py) and a guide (docs/guide.md).\n',
  'src/lib.rs': LIB_RS,
  'src/app.py': APP_PY,
  'docs/guide.md': GUIDE_MD,
};

function run(command, args, options) {
  const result = spawnSync(command, args, { encoding: 'utf8', ...options });
  if (result.status !== 0) {
    const why = result.error ? result.error.message : (result.stderr || result.stdout || '').trim();
    throw new Error(`${command} ${args.join(' ')} failed (exit ${result.status}): ${why}`);
  }
  return result.stdout;
}

function makeFixture(base) {
  const ws = join(base, 'workspace');
  const home = join(base, 'home');
  mkdirSync(home, { recursive: true });
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(ws, path)), { recursive: true });
    writeFileSync(join(ws, path), text);
  }
  const gitEnv = {
    PATH: process.env.PATH,
    HOME: home,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_AUTHOR_NAME: 'Fixture',
    GIT_AUTHOR_EMAIL: 'fixture@example.com',
    GIT_COMMITTER_NAME: 'Fixture',
    GIT_COMMITTER_EMAIL: 'fixture@example.com',
    GIT_AUTHOR_DATE: '2026-01-01T00:00:00Z',
    GIT_COMMITTER_DATE: '2026-01-01T00:00:00Z',
  };
  const git = (...args) => run('git', args, { cwd: ws, env: gitEnv });
  git('init', '-q', '-b', 'main');
  git('add', '-A');
  git('commit', '-q', '-m', 'First commit');
  // A change in the work tree, for ctx_diff_context and ctx_status.
  writeFileSync(join(ws, 'src/lib.rs'), LIB_RS.replace('x + 1', 'x + 2'));

  const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('CTX_')));
  Object.assign(env, {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    CTX_HOME: join(base, 'ctx-home'),
    NO_COLOR: '1',
  });
  const ctx = (...args) => run(ctxBin, ['-q', '-C', ws, ...args], { env });
  ctx('init');
  ctx('pack', 'create', 'docs');
  ctx('pack', 'add', 'docs', 'file:README.md');
  ctx('pack', 'add', 'docs', 'md_dir:docs');
  return { ws, env };
}

/** A connected client of `ctx -C WS mcp ARGS…`, with the server's stderr kept. */
async function connect(fixture, args) {
  const transport = new StdioClientTransport({
    command: ctxBin,
    args: ['-C', fixture.ws, 'mcp', ...args],
    env: fixture.env,
    cwd: fixture.ws,
    stderr: 'pipe',
  });
  const log = [];
  transport.stderr?.on('data', (chunk) => log.push(String(chunk)));
  const client = new Client({ name: 'ctx-mcp-clients', version: '1.0.0' });
  await client.connect(transport);
  return { client, log };
}

async function listTools(client) {
  const tools = [];
  let cursor;
  do {
    const page = await client.listTools(cursor ? { cursor } : {});
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor);
  return tools;
}

/** Two recorded runs, `first` and `second` (`latest`), for the ctx_runs_* tools. */
async function recordRuns(fixture) {
  const sessions = {
    first: [
      ['fs_read', { operations: [{ mode: 'Line', path: 'src/lib.rs' }] }],
      ['ctx_search', { pattern: 'helper' }],
    ],
    second: [['fs_read', { operations: [{ mode: 'Line', path: 'src/app.py' }] }]],
  };
  for (const [name, calls] of Object.entries(sessions)) {
    const { client, log } = await connect(fixture, ['--record', name]);
    try {
      await listTools(client);
      for (const [tool, args] of calls) {
        const result = await client.callTool({ name: tool, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS });
        if (result.isError) throw new Error(`recording ${name}: ${tool} failed: ${textOf(result)}`);
      }
    } catch (err) {
      throw new Error(`${err.message}\n${log.join('')}`);
    } finally {
      await client.close();
    }
  }
}

// ----------------------------------------------------------------------------------- the cases

// Per tool: `ok`, arguments that succeed (or a function of the earlier answers, by tool name,
// that makes them), and `fail`, arguments that must fail, each with `names`: what the message
// must contain (the bad value or the argument's name; of a list, any one). Calls run in this order: the write tools
// make the pack `notes` early, ctx_select builds the index ctx_index_inspect describes.
const CASES = {
  ctx_packs_list: {
    ok: {},
    fail: [
      { args: { max_tokens: 1 }, names: 'max_tokens', why: 'max_tokens below the minimum' },
      { args: { bogus: true }, names: 'bogus', why: 'an unknown argument' },
    ],
  },
  ctx_packs_create: {
    ok: { name: 'notes', budget: 4000 },
    fail: [
      { args: { name: 'docs' }, names: 'docs', why: 'a pack that exists' },
      { args: {}, names: 'name', why: 'missing required argument' },
      {
        args: { name: 'spare', tokenizer: 'nosuch_tokenizer' },
        names: 'nosuch_tokenizer',
        why: 'an unknown tokenizer',
      },
    ],
  },
  ctx_packs_add: {
    ok: { pack: 'notes', source: 'file:src/app.py' },
    fail: [
      { args: { pack: 'notes', source: 'file:../x' }, names: '../x', why: 'a path outside the workspace' },
      { args: { pack: 'nope', source: 'file:README.md' }, names: 'nope', why: 'an unknown pack' },
      { args: { pack: 'notes', source: 'cmd:ls' }, names: 'cmd', why: 'a cmd: source' },
      { args: { pack: 'notes' }, names: 'source', why: 'missing required argument' },
    ],
  },
  ctx_packs_get: {
    ok: { pack: 'docs' },
    fail: [
      { args: { pack: 'nope' }, names: 'nope', why: 'an unknown pack' },
      { args: {}, names: 'pack', why: 'missing required argument' },
    ],
  },
  ctx_packs_preview: {
    ok: { packs: ['docs'], show_payload: true },
    fail: [
      { args: { packs: ['nope'] }, names: 'nope', why: 'an unknown pack' },
      { args: { packs: ['docs'], style: 'fancy' }, names: 'fancy', why: 'an unknown style' },
      { args: { packs: [] }, names: 'packs', why: 'no packs' },
    ],
  },
  ctx_packs_render: {
    ok: { packs: ['docs'] },
    fail: [
      { args: { snapshot_id: 'nope' }, names: 'nope', why: 'an unknown snapshot' },
      { args: {}, names: 'packs', why: 'neither packs nor snapshot_id' },
      { args: { packs: ['docs'], cursor: 'nope' }, names: 'nope', why: 'a cursor never handed out' },
    ],
  },
  ctx_packs_snapshot: {
    ok: { packs: ['docs'], label: 'v1' },
    fail: [
      { args: { packs: ['nope'] }, names: 'nope', why: 'an unknown pack' },
      { args: {}, names: 'packs', why: 'missing required argument' },
    ],
  },
  ctx_packs_remove: {
    ok: (answers) => ({ pack: 'notes', artifact_id: answers.ctx_packs_add?.artifact?.artifact_id ?? 'unknown' }),
    fail: [
      { args: { pack: 'notes', artifact_id: 'ffffffffffff' }, names: 'ffffffffffff', why: 'an unknown artifact' },
      { args: { pack: 'notes' }, names: 'artifact_id', why: 'missing required argument' },
    ],
  },
  ctx_status: {
    ok: {},
    fail: [
      { args: { max_tokens: 1 }, names: 'max_tokens', why: 'max_tokens below the minimum' },
      { args: { cursor: 'nope' }, names: 'nope', why: 'a cursor never handed out' },
    ],
  },
  ctx_map: {
    ok: { depth: 2 },
    fail: [
      { args: { path: '../x' }, names: '../x', why: 'a path outside the workspace' },
      { args: { path: 'nope.py' }, names: 'nope.py', why: 'a missing path' },
      { args: { depth: 'deep' }, names: ['depth', 'deep'], why: 'a string for a number' },
    ],
  },
  ctx_summarize: {
    ok: { path: 'src/app.py' },
    fail: [
      { args: { path: 'nope.py' }, names: 'nope.py', why: 'a missing path' },
      { args: { path: '../x' }, names: '../x', why: 'a path outside the workspace' },
      { args: {}, names: 'path', why: 'missing required argument' },
    ],
  },
  ctx_search: {
    ok: { pattern: 'helper' },
    fail: [
      { args: { pattern: 'helper', mode: 'fuzzy' }, names: 'fuzzy', why: 'a bad mode' },
      { args: { pattern: 'helper', path: '../x' }, names: '../x', why: 'a path outside the workspace' },
      { args: { pattern: 'helper', path: 'nope.py' }, names: 'nope.py', why: 'a missing path' },
      { args: { pattern: '(unclosed', mode: 'regex' }, names: '(unclosed', why: 'a bad regex' },
      { args: {}, names: 'pattern', why: 'missing required argument' },
    ],
  },
  ctx_related: {
    ok: { file: 'src/lib.rs' },
    fail: [
      { args: { file: 'nope.py' }, names: 'nope.py', why: 'a missing path' },
      { args: { file: '../x' }, names: '../x', why: 'a path outside the workspace' },
      { args: {}, names: 'file', why: 'missing required argument' },
    ],
  },
  ctx_diff_context: {
    ok: {},
    fail: [
      { args: { base: 'nope' }, names: 'nope', why: 'an unknown revision' },
      { args: { path: '../x' }, names: '../x', why: 'a path outside the workspace' },
    ],
  },
  fs_read: {
    ok: { operations: [{ mode: 'Line', path: 'src/lib.rs' }, { mode: 'Directory', path: 'docs' }] },
    fail: [
      { args: { operations: [{ mode: 'Line', path: 'nope.py' }] }, names: 'nope.py', why: 'a missing path' },
      { args: { operations: [{ mode: 'Line', path: '../x' }] }, names: '../x', why: 'a path outside the workspace' },
      { args: { operations: [{ mode: 'Sideways', path: 'README.md' }] }, names: 'Sideways', why: 'a bad mode' },
      { args: {}, names: 'operations', why: 'missing required argument' },
    ],
  },
  ctx_select: {
    ok: { query: 'where does the Greeter class greet people, and what does helper do' },
    fail: [
      { args: { query: ' ' }, names: 'query', why: 'an empty query' },
      { args: { query: 'greeter', index: 'nope' }, names: 'nope', why: 'an unknown index' },
      { args: { query: 'greeter', budget: -1 }, names: 'budget', why: 'a negative budget' },
      { args: {}, names: 'query', why: 'missing required argument' },
    ],
  },
  ctx_index_inspect: {
    ok: {},
    fail: [{ args: { index: 'nope' }, names: 'nope', why: 'an unknown index' }],
  },
  ctx_runs_list: {
    ok: {},
    fail: [{ args: { max_tokens: 1 }, names: 'max_tokens', why: 'max_tokens below the minimum' }],
  },
  ctx_runs_show: {
    ok: { run: 'first', include_content: true },
    fail: [
      { args: { run: 'nope' }, names: 'nope', why: 'an unknown run' },
      { args: { run: 'first', max_output_bytes: 0 }, names: 'max_output_bytes', why: 'max_output_bytes 0' },
      { args: {}, names: 'run', why: 'missing required argument' },
    ],
  },
  ctx_runs_diff: {
    ok: { a: 'first', b: 'second' },
    fail: [
      { args: { a: 'first', b: 'nope' }, names: 'nope', why: 'an unknown run' },
      { args: { a: 'first' }, names: '`b`', why: 'missing required argument' },
    ],
  },
};

// ---------------------------------------------------------------------------------- the checks

function textOf(result) {
  return (result?.content ?? [])
    .filter((c) => c.type === 'text')
    .map((c) => c.text)
    .join('\n');
}

/** Every string in `value` with its JSON path, and every list of strings as one (joined). */
function strings(value, path = '$', out = []) {
  if (typeof value === 'string') out.push([path, value, [value]]);
  else if (Array.isArray(value)) {
    if (value.length > 1 && value.every((v) => typeof v === 'string')) out.push([path, value.join(''), value]);
    value.forEach((v, i) => strings(v, `${path}[${i}]`, out));
  } else if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) strings(v, `${path}.${k}`, out);
  }
  return out;
}

/** The strings (or lists of strings) of structuredContent the text repeats, when both are large. */
function duplicated(text, structured) {
  const json = JSON.stringify(structured ?? null);
  if (text.length <= LARGE || json.length <= LARGE) return [];
  return strings(structured)
    .filter(([, joined, parts]) => joined.length >= PAYLOAD && parts.every((p) => text.includes(p)))
    .map(([path, joined, parts]) => [parts.length > 1 ? `${path} (${parts.length} strings)` : path, joined]);
}

const short = (s, n = 240) => {
  const one = String(s).replace(/\s+/g, ' ').trim();
  return one.length > n ? `${one.slice(0, n)}…` : one;
};

async function main() {
  const failures = [];
  let passed = 0;
  const check = (ok, line) => {
    if (ok) passed += 1;
    else failures.push(line);
    return ok;
  };

  const base = mkdtempSync(join(tmpdir(), 'ctx-mcp-clients-'));
  let server;
  try {
    const fixture = makeFixture(base);
    await recordRuns(fixture);
    server = await connect(fixture, ['--tools', 'all', '--allow-write']);
    const { client } = server;
    const tools = await listTools(client);
    const byName = new Map(tools.map((t) => [t.name, t]));
    for (const tool of tools) {
      check(tool.name in CASES, `${tool.name}: in tools/list but not in CASES (tests/mcp-clients/ts-client.mjs); add it`);
    }
    for (const name of Object.keys(CASES)) {
      check(byName.has(name), `${name}: in CASES but not in tools/list`);
    }

    const answers = {};
    const rows = [];
    const sizes = [];
    for (const [name, cases] of Object.entries(CASES)) {
      const tool = byName.get(name);
      if (!tool) continue;
      const call = (args) => client.callTool({ name, arguments: args }, undefined, { timeout: CALL_TIMEOUT_MS });
      const row = { name, ok: 'FAIL', errors: '', text: '-', structured: '-' };

      // The call that succeeds.
      const args = typeof cases.ok === 'function' ? cases.ok(answers) : cases.ok;
      const label = `${name} ${JSON.stringify(args)}`;
      let result;
      try {
        result = await call(args);
      } catch (err) {
        check(false, `${label}: success call: the SDK threw: ${short(err.message)}`);
      }
      if (result) {
        const text = textOf(result);
        let good = check(!result.isError, `${label}: success call: isError: ${short(text)}`);
        const present = result.structuredContent !== undefined || !tool.outputSchema;
        good = check(present, `${label}: success call: no structuredContent though the tool has an outputSchema`) && good;
        good = check(text.length > 0, `${label}: success call: no text content`) && good;
        if (good) {
          row.ok = 'ok';
          answers[name] = result.structuredContent;
        }
        const json = JSON.stringify(result.structuredContent ?? null);
        row.text = text.length;
        row.structured = result.structuredContent === undefined ? 0 : json.length;
        const dup = duplicated(text, result.structuredContent);
        check(
          dup.length === 0,
          `${name}: text and structuredContent repeat the same payload: ` +
            dup.map(([path, s]) => `${path} (${s.length} chars)`).join(', '),
        );
        if (dup.length) {
          sizes.push(
            `${name}: text ${text.length} chars, structuredContent ${json.length} chars; the text repeats ` +
              dup.map(([path, s]) => `${path} (${s.length} chars)`).join(', '),
          );
        }
      }

      // The calls that must fail.
      let good = 0;
      for (const { args: bad, names, why } of cases.fail) {
        const where = `${name} ${JSON.stringify(bad)} (${why})`;
        let failed;
        let thrown;
        try {
          failed = await call(bad);
        } catch (err) {
          thrown = err;
        }
        let ok = true;
        let text;
        if (thrown) {
          // What ctx said, read past the SDK's output-schema check, to show what was lost.
          let said = '';
          try {
            const request = { method: 'tools/call', params: { name, arguments: bad } };
            said = textOf(await client.request(request, CallToolResultSchema, { timeout: CALL_TIMEOUT_MS }));
          } catch (err) {
            said = `(a JSON-RPC error: ${err.message})`;
          }
          ok = check(false, `${where}: the SDK threw "${short(thrown.message, 160)}"; ctx said "${short(said, 160)}"`);
          text = said;
        } else {
          text = textOf(failed);
          ok = check(failed.isError === true, `${where}: no isError (it succeeded): ${short(text)}`) && ok;
          ok = check(text.length > 0 && !text.includes('-32602') && !text.includes('Structured content does not match'),
            `${where}: the text is not ctx's message: "${short(text)}"`) && ok;
        }
        const named = [names].flat();
        const wanted = named.map((n) => `\`${n}\``).join(' or ');
        ok = check(named.some((n) => text.includes(n)), `${where}: the message does not name ${wanted}: "${short(text)}"`) && ok;
        if (ok) good += 1;
      }
      row.errors = `${good === cases.fail.length ? 'ok' : 'FAIL'} ${good}/${cases.fail.length}`;
      rows.push(row);
    }

    const widths = [20, 7, 10, 11, 17];
    const line = (cells) => cells.map((c, i) => String(c).padEnd(widths[i])).join(' ').trimEnd();
    console.log(line(['tool', 'success', 'errors', 'text chars', 'structured chars']));
    for (const r of rows) console.log(line([r.name, r.ok, r.errors, r.text, r.structured]));
    if (sizes.length) {
      console.log(`\nanswers whose text and structuredContent both pass ${LARGE} characters, with the same payload:`);
      for (const s of sizes) console.log(`  ${s}`);
    }
  } catch (err) {
    const stderr = server ? `\nserver stderr:\n${server.log.join('')}` : '';
    failures.push(`the run stopped: ${err.stack || err.message}${stderr}`);
  } finally {
    if (server) await server.client.close().catch(() => {});
    rmSync(base, { recursive: true, force: true });
  }

  if (failures.length) {
    console.log(`\nfailing checks (${failures.length}):`);
    for (const f of failures) console.log(`  ${f}`);
  }
  console.log(`\nmcp-clients: ${passed} passed, ${failures.length} failed`);
  process.exitCode = failures.length ? 1 : 0;
}

await main();
