/**
 * The catalogue console's forms: the category and product fields, and the text forms of variables
 * and the category tree that its pages show and read back.
 */
import type { Static } from '@sinclair/typebox';
import type { ConsoleField, ConsolePages } from '../../core/console.ts';
import { toBool } from '../../core/schemas.ts';
import type { UsersService } from '../users/contract.ts';
import type { ProductPatchBody } from './schemas.ts';
import type { Category, Variable } from './contract.ts';
import type { ProductImages } from './images.ts';
import type { DbCatalogue } from './catalogue.ts';

/** Lines `name: value, value` (a `*` after the name: required) to the API's variables. */
export function parseVariables(text: string): Static<typeof ProductPatchBody>['variables'] {
  const lines = text
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  if (!lines.length) return '';
  return lines.map((line) => {
    const [head = '', rest = ''] = line.split(/:(.*)/s);
    const required = head.trim().endsWith('*');
    const values = rest
      .split(',')
      .map((v) => v.trim())
      .filter(Boolean);
    return { name: head.trim().replace(/\*$/, ''), required: required ? 'true' : 'false', values };
  });
}

export function showVariables(variables: Variable[]): string {
  return variables.map((v) => `${v.name}${v.required ? '*' : ''}: ${v.values.join(', ')}`).join('\n');
}

/** The categories as a tree, each name indented by its depth. */
export function treeOrder(categories: Category[]): { category: Category; depth: number }[] {
  const out: { category: Category; depth: number }[] = [];
  const walk = (parentId: number, depth: number) => {
    for (const c of categories.filter((x) => x.parentId === parentId)) {
      out.push({ category: c, depth });
      if (depth < 20) walk(c.id, depth + 1);
    }
  };
  walk(0, 0);
  return out;
}

export const sizeText = (bytes: number) => (bytes < 1048576 ? `${Number((bytes / 1024).toFixed(1))} KiB` : `${Number((bytes / 1048576).toFixed(2))} MiB`);
export const yes = (v: boolean) => (v ? 'yes' : 'no');
export const checkbox = (form: Record<string, string>, name: string) => (toBool(form[name]) ? 'true' : 'false');

export type Shown = { values: Record<string, string>; errors: Record<string, string> };

/** What the catalogue's pages work with. */
export interface CataloguePages {
  pages: ConsolePages;
  store: DbCatalogue;
  images: ProductImages;
  users: UsersService;
  tz: () => string;
}

/** The category form's fields; `except` leaves a category out of its own parent list. */
export function categoryFields(categories: Category[], except?: number): ConsoleField[] {
  return [
    { name: 'name', label: 'Name', required: true },
    { name: 'slug', label: 'Slug', hint: 'Letters, digits, - and _; made from the name when empty.' },
    {
      name: 'parentID',
      label: 'Parent',
      type: 'select',
      options: [
        { value: '0', label: 'none (top level)' },
        ...treeOrder(categories)
          .filter(({ category }) => category.id !== except)
          .map(({ category, depth }) => ({ value: String(category.id), label: `${'— '.repeat(depth)}${category.name}` })),
      ],
    },
    { name: 'priority', label: 'Priority', type: 'number', hint: 'Low first among categories of the same parent.' },
    { name: 'isActive', label: 'Active', type: 'checkbox' },
  ];
}

/** The product form's fields. */
export async function productFields({ users, tz }: CataloguePages, categories: Category[]): Promise<ConsoleField[]> {
  return [
    { name: 'name', label: 'Name', required: true },
    {
      name: 'categoryID',
      label: 'Category',
      type: 'select',
      required: true,
      options: treeOrder(categories).map(({ category, depth }) => ({ value: String(category.id), label: `${'— '.repeat(depth)}${category.name}` })),
    },
    { name: 'price', label: 'Price', type: 'number', required: true, hint: 'In credits, e.g. 4.99.' },
    { name: 'discountedPrice', label: 'Discounted price', type: 'number', hint: 'Charged instead of the price until the discount expires.' },
    { name: 'discountExpiryDate', label: 'Discount expires', type: 'datetime', hint: `Site time (${tz()}).` },
    { name: 'stock', label: 'Stock', type: 'number', hint: '-1 = unlimited.' },
    {
      name: 'giveRoleID',
      label: 'Role granted',
      type: 'select',
      options: [
        { value: '0', label: 'none' },
        ...(await users.listRoles()).filter((r) => !users.privilegeOf(r)).map((r) => ({ value: String(r.id), label: r.name })),
      ],
      hint: 'Privileged roles (those that open this console) are never sold.',
    },
    { name: 'duration', label: 'Role duration (days)', type: 'number', hint: '0 = permanent, -1 = no role.' },
    {
      name: 'variables',
      label: 'Variables',
      type: 'textarea',
      hint: 'One per line: name: value, value (a * after the name makes it required; no values = any text).',
    },
    { name: 'details', label: 'Details', type: 'textarea' },
    { name: 'priority', label: 'Priority', type: 'number' },
    { name: 'isActive', label: 'On sale', type: 'checkbox' },
    { name: 'isFeaturedProduct', label: 'Featured', type: 'checkbox' },
  ];
}
