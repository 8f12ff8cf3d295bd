/**
 * Counts the public names of every published package: each value and type that an entry point in the package's
 * `exports` declares, read from the built declarations (`dist/*.d.ts`, so run `pnpm build` first). A name that is
 * both a value and a type (a class, a const with a type of the same name) counts once.
 *
 *   pnpm public-names           one line per entry point and the total
 *   pnpm public-names --names   every name as well
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * The most public names the packages may export together; a test holds the count to it. A ceiling that only
 * goes down.
 */
export const PUBLIC_NAME_LIMIT = 150;

interface EntryPoint {
  /** `@infersignal/core` or `@infersignal/core/signals`. */
  specifier: string;
  /** Absolute path of the entry point's `.d.ts`. */
  declarations: string;
}

interface EntryCount extends EntryPoint {
  names: string[];
  /** Types that an exported function's or class's parameters or result name but no entry point exports. */
  unnamed: string[];
}

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');

function entryPoints(): EntryPoint[] {
  const found: EntryPoint[] = [];
  const packages = join(root, 'packages');
  for (const dir of readdirSync(packages).sort()) {
    const manifest = JSON.parse(readFileSync(join(packages, dir, 'package.json'), 'utf8')) as {
      name: string;
      private?: boolean;
      exports?: Record<string, unknown>;
    };
    if (manifest.private || !manifest.exports) continue;
    for (const [subpath, target] of Object.entries(manifest.exports)) {
      const declarations =
        typeof target === 'object' ? (target as { import?: { types?: string } }).import?.types : undefined;
      if (!declarations) continue;
      found.push({
        specifier: subpath === '.' ? manifest.name : `${manifest.name}/${subpath.slice(2)}`,
        declarations: join(packages, dir, declarations),
      });
    }
  }
  return found;
}

export function countPublicNames(): EntryCount[] {
  const entries = entryPoints();
  const program = ts.createProgram(
    entries.map((entry) => entry.declarations),
    {
      noEmit: true,
      skipLibCheck: true,
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
    },
  );
  const checker = program.getTypeChecker();
  const exported = new Set<ts.Symbol>();
  const counted = entries.map((entry) => {
    const file = program.getSourceFile(entry.declarations);
    if (!file) throw new Error(`${entry.specifier}: ${entry.declarations} is missing; run pnpm build`);
    const moduleSymbol = checker.getSymbolAtLocation(file);
    const symbols = moduleSymbol ? checker.getExportsOfModule(moduleSymbol) : [];
    for (const symbol of symbols) exported.add(resolved(checker, symbol));
    return { entry, symbols };
  });
  return counted.map(({ entry, symbols }) => ({
    ...entry,
    names: [...new Set(symbols.map((symbol) => symbol.getName()))].sort(),
    unnamed: [...new Set(symbols.flatMap((symbol) => unnamedTypes(checker, symbol, exported)))].sort(),
  }));
}

function resolved(checker: ts.TypeChecker, symbol: ts.Symbol): ts.Symbol {
  return symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
}

/**
 * The package types (declared in a `dist/*.d.ts`) named by the parameters and result of an exported function, or
 * by an exported class's constructor, that no entry point exports: a user could not write them.
 */
function unnamedTypes(checker: ts.TypeChecker, symbol: ts.Symbol, exported: Set<ts.Symbol>): string[] {
  const target = resolved(checker, symbol);
  const typeNodes: ts.TypeNode[] = [];
  for (const declaration of target.declarations ?? []) {
    const signatures: ts.SignatureDeclarationBase[] = ts.isFunctionDeclaration(declaration)
      ? [declaration]
      : ts.isClassDeclaration(declaration)
        ? declaration.members.filter(ts.isConstructorDeclaration)
        : [];
    for (const signature of signatures) {
      for (const parameter of signature.parameters) if (parameter.type) typeNodes.push(parameter.type);
      if (signature.type) typeNodes.push(signature.type);
    }
  }
  const missing: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isTypeReferenceNode(node)) {
      const referenced = checker.getSymbolAtLocation(node.typeName);
      const declaration = referenced && resolved(checker, referenced).declarations?.[0];
      if (
        referenced &&
        declaration &&
        /[\\/]packages[\\/][^\\/]+[\\/]dist[\\/]/.test(declaration.getSourceFile().fileName) &&
        !(resolved(checker, referenced).flags & ts.SymbolFlags.TypeParameter) &&
        !exported.has(resolved(checker, referenced))
      )
        missing.push(`${symbol.getName()} → ${referenced.getName()}`);
    }
    ts.forEachChild(node, visit);
  };
  for (const node of typeNodes) visit(node);
  return missing;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const counts = countPublicNames();
  const total = counts.reduce((sum, entry) => sum + entry.names.length, 0);
  const listNames = process.argv.includes('--names');
  for (const entry of counts) {
    console.log(`${String(entry.names.length).padStart(4)}  ${entry.specifier}`);
    if (listNames) console.log(`        ${entry.names.join(', ')}`);
    for (const unnamed of entry.unnamed) console.log(`        not exported: ${unnamed}`);
  }
  console.log(`${String(total).padStart(4)}  in all (limit ${PUBLIC_NAME_LIMIT})`);
}
