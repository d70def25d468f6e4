/**
 * The store's sections of the staff console: the catalogue (categories and products) and the
 * orders (filter, view, refund). Forms are checked with the admin API's own body schemas and
 * call the same catalogue and order code, so a page refuses exactly what the API refuses.
 */
import type { Static } from '@sinclair/typebox';
import {
  errorsFor, playerCell, type ConsoleBlock, type ConsoleCell, type ConsoleField, type ConsolePage, type ConsolePages, type ConsoleRequest,
  type ConsoleSection, idOf,
} from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { counted, displayTimestamp, formatMoney, now, parseClientTimestamp } from '../../core/format.ts';
import { toBool } from '../../core/schemas.ts';
import { deliveryRef } from '../delivery/contract.ts';
import { usersRef, type UsersService } from '../users/contract.ts';
import { CategoryCreateBody, CategoryPatchBody, ProductCreateBody, ProductPatchBody, RulesPatchBody, categoryInput, productInput } from './schemas.ts';
import { storedImage, type Category, type Product, type Variable } from './contract.ts';
import { IMAGE_ACCEPT, type ProductImages } from './images.ts';
import type { DbStoreService } from './service.ts';

/** What the store's register function hands its console sections. */
export interface StoreInternals {
  store: DbStoreService;
  images: ProductImages;
}

const PAGE = 50;
/** The dashboard's charts: one bar a day for this many days. */
const CHART_DAYS = 30;

/** Lines `name: value, value` (a `*` after the name: required) to the API's variables. */
function parseVariables(text: string): Static<typeof ProductPatchBody>['variables'] {
  const lines = text.split('\n').map((l) => l.trim()).filter(Boolean);
  if (!lines.length) return '';
  return lines.map((line) => {
    const [head = '', rest = ''] = line.split(/:(.*)/s);
    const required = head.trim().endsWith('*');
    const values = rest.split(',').map((v) => v.trim()).filter(Boolean);
    return { name: head.trim().replace(/\*$/, ''), required: required ? 'true' : 'false', values };
  });
}

function showVariables(variables: Variable[]): string {
  return variables.map((v) => `${v.name}${v.required ? '*' : ''}: ${v.values.join(', ')}`).join('\n');
}

/** The categories as a tree, each name indented by its depth. */
function treeOrder(categories: Category[]): { category: Category; depth: number }[] {
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

const sizeText = (bytes: number) => (bytes < 1048576 ? `${Number((bytes / 1024).toFixed(1))} KiB` : `${Number((bytes / 1048576).toFixed(2))} MiB`);
const yes = (v: boolean) => (v ? 'yes' : 'no');
const checkbox = (form: Record<string, string>, name: string) => (toBool(form[name]) ? 'true' : 'false');

type Shown = { values: Record<string, string>; errors: Record<string, string> };

/** What the catalogue's pages work with. */
interface CataloguePages {
  pages: ConsolePages;
  store: DbStoreService;
  images: ProductImages;
  users: UsersService;
  tz: () => string;
}

export const catalogueSection: ConsoleSection<unknown, StoreInternals> = {
  id: 'catalogue',
  title: 'Catalogue',
  order: 20,
  pages(pages, ctx, { store, images }) {
    const cp: CataloguePages = { pages, store, images, users: ctx.services.get(usersRef), tz: () => ctx.settings.get().timezone };
    pages.get('', async () => overviewPage(cp));
    categoryRoutes(cp);
    productRoutes(cp);
  },
};

/** The category form's fields; `except` leaves a category out of its own parent list. */
function categoryFields(categories: Category[], except?: number): ConsoleField[] {
  return [
    { name: 'name', label: 'Name', required: true },
    { name: 'slug', label: 'Slug', hint: 'Letters, digits, - and _; made from the name when empty.' },
    {
      name: 'parentID', label: 'Parent', type: 'select',
      options: [{ value: '0', label: 'none (top level)' },
        ...treeOrder(categories).filter(({ category }) => category.id !== except).map(({ category, depth }) => ({ value: String(category.id),
          label: `${'— '.repeat(depth)}${category.name}` }))],
    },
    { name: 'priority', label: 'Priority', type: 'number', hint: 'Low first among categories of the same parent.' },
    { name: 'isActive', label: 'Active', type: 'checkbox' },
  ];
}

/** The product form's fields. */
async function productFields({ users, tz }: CataloguePages, categories: Category[]): Promise<ConsoleField[]> {
  return [
    { name: 'name', label: 'Name', required: true },
    { name: 'categoryID', label: 'Category', type: 'select', required: true,
      options: treeOrder(categories).map(({ category, depth }) => ({ value: String(category.id), label: `${'— '.repeat(depth)}${category.name}` })) },
    { name: 'price', label: 'Price', type: 'number', required: true, hint: 'In credits, e.g. 4.99.' },
    { name: 'discountedPrice', label: 'Discounted price', type: 'number', hint: 'Charged instead of the price until the discount expires.' },
    { name: 'discountExpiryDate', label: 'Discount expires', type: 'datetime', hint: `Site time (${tz()}).` },
    { name: 'stock', label: 'Stock', type: 'number', hint: '-1 = unlimited.' },
    { name: 'giveRoleID', label: 'Role granted', type: 'select',
      options: [{ value: '0', label: 'none' }, ...(await users.listRoles()).filter((r) => !users.privilegeOf(r)).map((r) => ({ value: String(r.id),
        label: r.name }))], hint: 'Privileged roles (those that open this console) are never sold.' },
    { name: 'duration', label: 'Role duration (days)', type: 'number', hint: '0 = permanent, -1 = no role.' },
    { name: 'variables', label: 'Variables', type: 'textarea',
      hint: 'One per line: name: value, value (a * after the name makes it required; no values = any text).' },
    { name: 'details', label: 'Details', type: 'textarea' },
    { name: 'priority', label: 'Priority', type: 'number' },
    { name: 'isActive', label: 'On sale', type: 'checkbox' },
    { name: 'isFeaturedProduct', label: 'Featured', type: 'checkbox' },
  ];
}

/** The catalogue: categories and products listed, and the forms that create them. */
async function overviewPage(cp: CataloguePages, extra: { category?: Shown; product?: Shown } = {}): Promise<ConsolePage> {
  const { pages, store, tz } = cp;
  const [categories, products] = await Promise.all([store.categories(), store.products()]);
  const names = new Map(categories.map((c) => [c.id, c.name]));
  const at = now();
  return {
    title: 'Catalogue', status: extra.category || extra.product ? 422 : 200,
    blocks: [
      {
        kind: 'table', caption: 'Categories', empty: 'No category yet: create the first one below.',
        columns: [{ key: 'name', label: 'Name' }, { key: 'slug', label: 'Slug' }, { key: 'products', label: 'Products', numeric: true },
          { key: 'active', label: 'Active' }, { key: 'up', label: 'Move up' }, { key: 'down', label: 'Move down' }, { key: 'delete', label: 'Delete' }],
        rows: treeOrder(categories).map(({ category: c, depth }) => {
          const siblings = categories.filter((x) => x.parentId === c.parentId);
          const at = siblings.indexOf(c);
          return {
            name: { text: `${'— '.repeat(depth)}${c.name}`, href: `${pages.base}/categories/${c.id}` }, slug: c.slug, active: yes(c.isActive),
            products: String(products.filter((p) => p.categoryId === c.id).length),
            up: at > 0 ? { action: `${pages.base}/categories/${c.id}/move?to=up`, label: `Move ${c.name} up` } : '',
            down: at < siblings.length - 1 ? { action: `${pages.base}/categories/${c.id}/move?to=down`, label: `Move ${c.name} down` } : '',
            delete: { action: `${pages.base}/categories/${c.id}/delete`, label: `Delete ${c.name}`, confirm: `Delete the category ${c.name}?` },
          };
        }),
      },
      {
        kind: 'table', caption: 'Products', empty: 'No product yet.',
        columns: [{ key: 'name', label: 'Name' }, { key: 'category', label: 'Category' }, { key: 'price', label: 'Price', numeric: true },
          { key: 'discount', label: 'Discount', numeric: true }, { key: 'stock', label: 'Stock', numeric: true }, { key: 'active', label: 'On sale' }],
        rows: products.map((p): Record<string, ConsoleCell> => ({
          name: { text: p.name, href: `${pages.base}/products/${p.id}` }, category: names.get(p.categoryId) ?? String(p.categoryId),
          price: formatMoney(p.price),
          discount: p.discountedPrice > 0 && p.discountExpiryDate > at ? `${formatMoney(p.discountedPrice)} until ` +
            `${displayTimestamp(p.discountExpiryDate, tz())}` : '',
          stock: p.stock === -1 ? 'unlimited' : String(p.stock), active: yes(p.isActive),
        })),
      },
      {
        kind: 'form', id: 'new-category', title: 'New category', action: `${pages.base}/categories`, submit: 'Create category',
        values: extra.category?.values ?? { isActive: 'true', parentID: '0' }, errors: extra.category?.errors,
        fields: categoryFields(categories),
      },
      {
        kind: 'form', id: 'new-product', title: 'New product', action: `${pages.base}/products`, submit: 'Create product',
        values: extra.product?.values ?? { isActive: 'true', stock: '-1', duration: '-1', giveRoleID: '0' }, errors: extra.product?.errors,
        fields: await productFields(cp, categories),
      },
    ],
  };
}

/** A category's edit form. */
async function categoryPage({ pages, store }: CataloguePages, c: Category, edit?: Shown): Promise<ConsolePage> {
  return {
    title: c.name, status: edit ? 422 : 200,
    blocks: [
      { kind: 'links', items: [{ label: 'Back to the catalogue', href: pages.base }] },
      {
        kind: 'form', id: 'edit-category', title: 'Edit category', action: `${pages.base}/categories/${c.id}`, submit: 'Save category',
        values: edit?.values ?? { name: c.name, slug: c.slug, parentID: String(c.parentId), priority: String(c.priority), isActive: String(c.isActive) },
        errors: edit?.errors, fields: categoryFields(await store.categories(), c.id),
      },
    ],
  };
}

/** A product's forms: its fields, its image, its purchase rules, and deleting it. */
async function productPage(cp: CataloguePages, p: Product, edit?: Shown, rulesEdit?: Shown, imageError?: string): Promise<ConsolePage> {
  const { pages, store, images, tz } = cp;
  const commands = pages.href('delivery', `/products/${p.id}`);
  const [current, products] = await Promise.all([store.rulesOf(p.id), store.products()]);
  return {
    title: p.name, status: edit || rulesEdit || imageError ? 422 : 200,
    blocks: [
      ...(commands ? [{ kind: 'links' as const, items: [{ label: 'Commands run on game servers when this product is bought', href: commands }] }] : []),
      {
        kind: 'form', id: 'edit-product', title: 'Edit product', action: `${pages.base}/products/${p.id}`, submit: 'Save product',
        values: edit?.values ?? {
          name: p.name, categoryID: String(p.categoryId), price: formatMoney(p.price),
          discountedPrice: p.discountedPrice ? formatMoney(p.discountedPrice) : '',
          discountExpiryDate: p.discountedPrice ? displayTimestamp(p.discountExpiryDate, tz()) : '', stock: String(p.stock),
          giveRoleID: String(p.giveRoleId),
          duration: String(p.duration), variables: showVariables(p.variables), details: p.details, priority: String(p.priority),
          isActive: String(p.isActive), isFeaturedProduct: String(p.isFeatured), stockShown: String(p.stock),
        },
        errors: edit?.errors,
        fields: [...await productFields(cp, await store.categories()), { name: 'stockShown', label: 'Stock shown', type: 'hidden' }],
      },
      ...(storedImage(p) ? [{ kind: 'links' as const, heading: 'Image',
        items: [{ label: `Current image (${p.imageType.toUpperCase()})`, href: storedImage(p)! }] }] : []),
      {
        kind: 'form', id: 'product-image', title: storedImage(p) ? 'Replace the image' : 'Upload an image', action: `${pages.base}/products/${p.id}/image`,
        submit: 'Upload image',
        errors: imageError ? { image: imageError } : undefined,
        fields: [{ name: 'image', label: 'Image file', type: 'file', required: true, accept: IMAGE_ACCEPT,
          hint: `PNG, JPEG, WebP or GIF, at most ${sizeText(images.maxBytes)}.` }],
      },
      {
        kind: 'form', id: 'product-rules', title: 'Purchase rules', action: `${pages.base}/products/${p.id}/rules`, submit: 'Save rules',
        values: rulesEdit?.values ?? {
          requiredProductID: String(current.requiredProductId), requireLinkedAccount: String(current.requireLinkedAccount),
          preventDowngrade: String(current.preventDowngrade),
        },
        errors: rulesEdit?.errors,
        fields: [
          {
            name: 'requiredProductID', label: 'Requires having bought', type: 'select',
            options: [{ value: '0', label: 'nothing' }, ...products.filter((x) => x.id !== p.id).map((x) => ({ value: String(x.id), label: x.name }))],
          },
          { name: 'requireLinkedAccount', label: 'Requires a linked chat account', type: 'checkbox' },
          { name: 'preventDowngrade', label: 'No downgrade: refused to a player holding a higher role from a product of this category', type: 'checkbox' },
        ],
      },
      {
        kind: 'form', id: 'delete-product', title: 'Delete product', action: `${pages.base}/products/${p.id}/delete`, submit: 'Delete product',
        fields: [], confirm: `Delete ${p.name}? Its orders keep what was bought.`,
      },
    ],
  };
}

/** The category pages' handlers: create, delete, edit, and move among siblings. */
function categoryRoutes(cp: CataloguePages): void {
  const { pages, store } = cp;
  pages.post('/categories', async ({ body, invalid, form }) => {
    const values = { ...form, isActive: checkbox(form, 'isActive') };
    if (invalid) return overviewPage(cp, { category: { values, errors: invalid } });
    const b = body as Static<typeof CategoryCreateBody>;
    try {
      const c = await store.createCategory({ ...categoryInput(b), name: b.name, isActive: toBool(values.isActive) });
      return { redirect: pages.base, notice: `Category ${c.name} created.` };
    } catch (err) {
      return overviewPage(cp, { category: { values, errors: errorsFor(err, Object.keys(CategoryCreateBody.properties), { CATEGORY_NOT_FOUND: 'parentID' }) } });
    }
  }, { body: CategoryCreateBody });

  pages.post('/categories/:id/delete', async ({ params }) => {
    const c = await store.requireCategory(idOf(params.id));
    try {
      await store.deleteCategory(c.id);
    } catch (err) {
      if (err instanceof DomainError && err.code === 'CONFLICT') return { redirect: pages.base, notice: `Not deleted: ${err.message}` };
      throw err;
    }
    return { redirect: pages.base, notice: `Category ${c.name} deleted.` };
  });

  pages.get('/categories/:id', async ({ params }) => categoryPage(cp, await store.requireCategory(idOf(params.id))));

  pages.post('/categories/:id', async ({ params, body, invalid, form }) => {
    const c = await store.requireCategory(idOf(params.id));
    const values = { ...form, isActive: checkbox(form, 'isActive') };
    if (invalid) return categoryPage(cp, c, { values, errors: invalid });
    const b = body as Static<typeof CategoryPatchBody>;
    try {
      // An emptied slug (or priority) keeps the current one.
      const saved = await store.updateCategory(c.id, { ...categoryInput(b), isActive: toBool(values.isActive) });
      return { redirect: pages.base, notice: `Category ${saved.name} saved.` };
    } catch (err) {
      return categoryPage(cp, c, { values, errors: errorsFor(err, Object.keys(CategoryPatchBody.properties),
        { CATEGORY_NOT_FOUND: 'parentID', CONFLICT: 'slug' }) });
    }
  }, { body: CategoryPatchBody });

  /** One step up or down among its siblings: the siblings get their new places as priorities (the API's reorder). */
  pages.post('/categories/:id/move', async ({ params, query }) => {
    const c = await store.requireCategory(idOf(params.id));
    const siblings = (await store.categories()).filter((x) => x.parentId === c.parentId).map((x) => x.id);
    const from = siblings.indexOf(c.id);
    const to = query.to === 'up' ? from - 1 : from + 1;
    if (to < 0 || to >= siblings.length) return { redirect: pages.base, notice: `${c.name} is already ${query.to === 'up' ? 'first' : 'last'}.` };
    [siblings[from], siblings[to]] = [siblings[to]!, siblings[from]!];
    await store.reorder('categories', siblings);
    return { redirect: pages.base, notice: `${c.name} moved ${query.to === 'up' ? 'up' : 'down'}.` };
  });
}

/** The product pages' handlers: create, edit, image, purchase rules, delete. */
function productRoutes(cp: CataloguePages): void {
  const { pages, store, images, tz } = cp;
  /** The product's form fields sent as the API would get them: variables as a list, unticked boxes as false. */
  const productBody = (form: Record<string, string>) => ({
    ...form, isActive: checkbox(form, 'isActive'), isFeaturedProduct: checkbox(form, 'isFeaturedProduct'),
  });
  const productErrors = (err: unknown) => errorsFor(err, Object.keys(ProductCreateBody.properties),
    { CATEGORY_NOT_FOUND: 'categoryID', ROLE_NOT_FOUND: 'giveRoleID', INVALID_AMOUNT: 'price' });

  pages.post('/products', async ({ body, invalid, form }) => {
    const values = productBody(form);
    if (invalid) return overviewPage(cp, { product: { values, errors: invalid } });
    try {
      const b = { ...(body as Static<typeof ProductCreateBody>), variables: parseVariables(form.variables ?? '') };
      const input = productInput(b, tz());
      const p = await store.createProduct({
        ...input, categoryId: b.categoryID, name: b.name, price: input.price!, isActive: toBool(values.isActive),
        isFeatured: toBool(values.isFeaturedProduct),
      });
      return { redirect: `${pages.base}/products/${p.id}`, notice: `Product ${p.name} created.` };
    } catch (err) {
      return overviewPage(cp, { product: { values, errors: productErrors(err) } });
    }
  }, { body: ProductCreateBody });

  pages.get('/products/:id', async ({ params }) => productPage(cp, await store.requireProduct(Number(params.id))));

  pages.post('/products/:id', async ({ params, body, invalid, form }) => {
    const p = await store.requireProduct(Number(params.id));
    const values = productBody(form);
    if (invalid) return productPage(cp, p, { values, errors: invalid });
    try {
      const b = { ...(body as Static<typeof ProductPatchBody>), variables: parseVariables(form.variables ?? '') };
      const input = productInput(b, tz());
      // An emptied discount field clears the discount, as the form shows no discount then.
      if (!form.discountedPrice) input.discountedPrice = 0;
      // A stock left as the page showed it is not sent: buys since then have taken from it.
      if (form.stock === form.stockShown) delete input.stock;
      await store.updateProduct(p.id, { ...input, isActive: toBool(values.isActive), isFeatured: toBool(values.isFeaturedProduct) });
      return { redirect: `${pages.base}/products/${p.id}`, notice: `Product ${b.name ?? p.name} saved.` };
    } catch (err) {
      return productPage(cp, p, { values, errors: productErrors(err) });
    }
  }, { body: ProductPatchBody });

  pages.post('/products/:id/image', async ({ params, upload }) => {
    const p = await store.requireProduct(idOf(params.id));
    if (!upload?.data.length) return productPage(cp, p, undefined, undefined, 'Choose an image file to upload.');
    if (upload.tooLarge) return productPage(cp, p, undefined, undefined, `The file is larger than ${sizeText(images.maxBytes)}; nothing was changed.`);
    try {
      await store.updateProduct(p.id, await images.save(upload.data));
    } catch (err) {
      return productPage(cp, p, undefined, undefined, errorsFor(err, ['image']).image ?? (err as Error).message);
    }
    return { redirect: `${pages.base}/products/${p.id}`, notice: `Image of ${p.name} saved.` };
  }, { upload: { field: 'image', maxBytes: images.maxBytes } });

  pages.post('/products/:id/rules', async ({ params, body, invalid, form }) => {
    const p = await store.requireProduct(idOf(params.id));
    const values = { ...form, requireLinkedAccount: checkbox(form, 'requireLinkedAccount'), preventDowngrade: checkbox(form, 'preventDowngrade') };
    if (invalid) return productPage(cp, p, undefined, { values, errors: invalid });
    const b = body as Static<typeof RulesPatchBody>;
    try {
      await store.setRules(p.id, {
        requiredProductId: b.requiredProductID ?? 0, requireLinkedAccount: toBool(values.requireLinkedAccount),
        preventDowngrade: toBool(values.preventDowngrade),
      });
      return { redirect: `${pages.base}/products/${p.id}`, notice: `Purchase rules of ${p.name} saved.` };
    } catch (err) {
      return productPage(cp, p, undefined, { values, errors: errorsFor(err, ['requiredProductID'], { PRODUCT_NOT_FOUND: 'requiredProductID' }) });
    }
  }, { body: RulesPatchBody });

  pages.post('/products/:id/delete', async ({ params }) => {
    const p = await store.requireProduct(Number(params.id));
    await store.deleteProduct(p.id);
    return { redirect: pages.base, notice: `Product ${p.name} deleted.` };
  });
}

export const ordersSection: ConsoleSection<unknown, StoreInternals> = {
  id: 'orders',
  title: 'Orders',
  order: 50,
  pages(pages, ctx, { store }) {
    const { settings } = ctx;
    const users = ctx.services.get(usersRef);
    /** The start of today and of this month in the site's time zone, as stored UTC times. */
    const periodStarts = () => {
      const local = displayTimestamp(now(), settings.get().timezone);
      const tz = settings.get().timezone;
      return { today: parseClientTimestamp(`${local.slice(0, 10)} 00:00:00`, tz)!, month: parseClientTimestamp(`${local.slice(0, 8)}01 00:00:00`, tz)! };
    };
    pages.dashboard(async () => {
      const { today, month } = periodStarts();
      const [day, mon] = await Promise.all([store.salesSince(today), store.salesSince(month)]);
      const sum = (rows: { type: string; orders: number; total: number }[], type: string) => rows.find((r) => r.type === type) ?? { orders: 0, total: 0 };
      const currency = settings.get().currency;
      return [
        { label: `credit sales today (${counted(sum(day, 'credit').orders, 'order')})`, value: formatMoney(sum(day, 'credit').total), href: pages.base },
        { label: `credit sales this month (${counted(sum(mon, 'credit').orders, 'order')})`, value: formatMoney(sum(mon, 'credit').total), href: pages.base },
        { label: `${currency} received today`, value: formatMoney(sum(day, 'payment').total), href: `${pages.base}?type=payment` },
        { label: `${currency} received this month`, value: formatMoney(sum(mon, 'payment').total), href: `${pages.base}?type=payment` },
      ];
    });

    // Sales and top-ups of the last 30 days in the site's time zone, one bar a day.
    pages.charts(async () => {
      const tz = settings.get().timezone;
      const today = displayTimestamp(now(), tz).slice(0, 10);
      const days = Array.from({ length: CHART_DAYS }, (_,
        i) => new Date(Date.parse(`${today}T00:00:00Z`) - (CHART_DAYS - 1 - i) * 86_400_000).toISOString().slice(0, 10));
      const hours = await store.salesByHour(parseClientTimestamp(`${days[0]} 00:00:00`, tz)!);
      const byDay = (type: string) => {
        const sums = new Map(days.map((d) => [d, 0]));
        for (const h of hours) {
          const day = displayTimestamp(`${h.hour}:00:00`, tz).slice(0, 10);
          if (h.type === type && sums.has(day)) sums.set(day, sums.get(day)! + h.total);
        }
        return [...sums.values()];
      };
      return [
        { heading: `Credit sales, last ${CHART_DAYS} days`, labels: days, values: byDay('credit'), money: true },
        { heading: `${settings.get().currency} received (top-ups and purchases), last ${CHART_DAYS} days`, labels: days, values: byDay('payment'),
          money: true },
      ];
    });

    pages.get('', async ({ query }) => {
      const filter = { status: query.status || undefined, type: query.type || undefined };
      const errors: Record<string, string> = {};
      let userId: number | undefined;
      if (filter.status && !['completed', 'refunded', 'disputed'].includes(filter.status)) errors.status = 'status must be completed, refunded or disputed';
      if (filter.type && !['credit', 'payment'].includes(filter.type)) errors.type = 'type must be credit or payment';
      if (query.username) {
        const user = await users.findByUsername(query.username);
        if (user) userId = user.id;
        else errors.username = `No user is named ${query.username}.`;
      }
      const before = /^[0-9]{1,15}$/.test(query.before ?? '') ? Number(query.before) : undefined;
      const rows = Object.keys(errors).length ? [] : await store.listOrders({ ...filter, userId, before, limit: PAGE });
      const keep = new URLSearchParams(Object.entries({ status: query.status ?? '', type: query.type ?? '',
        username: query.username ?? '' }).filter(([, v]) => v));
      const link = (extra: Record<string, string>) => `${pages.base}?${new URLSearchParams([...keep, ...Object.entries(extra)])}`;
      const names = await users.usernames(rows.map((o) => Number(o.accountID)));
      return {
        title: 'Orders', status: Object.keys(errors).length ? 422 : 200,
        blocks: [
          {
            kind: 'form', id: 'order-filter', title: 'Filter', method: 'get', action: pages.base, submit: 'Show orders', errors,
            values: { status: query.status ?? '', type: query.type ?? '', username: query.username ?? '' },
            fields: [
              { name: 'status', label: 'Status', type: 'select',
                options: [{ value: '', label: 'any' }, ...['completed', 'refunded', 'disputed'].map((s) => ({ value: s, label: s }))] },
              { name: 'type', label: 'Paid with', type: 'select',
                options: [{ value: '', label: 'any' }, { value: 'credit', label: 'credits' }, { value: 'payment', label: 'real money' }] },
              { name: 'username', label: 'Player', type: 'search', hint: 'Exact username.' },
            ],
          },
          {
            kind: 'table', caption: 'Orders, newest first', empty: 'No order matches.',
            columns: [{ key: 'id', label: 'Order' }, { key: 'date', label: 'Date' }, { key: 'player', label: 'Player' }, { key: 'type', label: 'Type' },
              { key: 'total', label: 'Total', numeric: true }, { key: 'status', label: 'Status' }],
            rows: rows.map((o) => ({
              id: { text: `#${o.id}`, href: `${pages.base}/${o.id}` }, date: o.creationDate,
              player: playerCell(pages, o.accountID, names),
              type: o.type, total: o.total, status: o.status,
            })),
            next: rows.length === PAGE ? link({ before: rows.at(-1)!.id }) : undefined,
            first: before !== undefined ? link({}) : undefined,
          },
        ],
      };
    });

    pages.get('/:id', async ({ params }) => {
      const { order, items } = await store.getOrder(/^[0-9]{1,15}$/.test(params.id!) ? Number(params.id) : 0);
      const refundable = order.type === 'credit' && order.status === 'completed';
      const player = playerCell(pages, order.accountID, await users.usernames([Number(order.accountID)]));
      return {
        title: `Order #${order.id}`,
        blocks: [
          {
            kind: 'stats', items: [
              { label: 'status', value: order.status }, { label: 'total', value: order.total }, { label: 'type', value: order.type },
              { label: 'date', value: order.creationDate }, typeof player === 'string' ? { label: 'player', value: player } : { label: 'player',
                value: player.text, href: player.href },
              { label: 'cashback', value: order.cashback },
            ],
          },
          {
            kind: 'table', caption: 'Items', empty: 'A payment: no items.',
            columns: [{ key: 'product', label: 'Product' }, { key: 'quantity', label: 'Quantity', numeric: true }, { key: 'variables', label: 'Variables' }],
            rows: items.map((i) => ({ product: i.productName, quantity: String(i.quantity),
              variables: Object.entries(i.variables).map(([k, v]) => `${k}=${v}`).join(', ') })),
          },
          ...(refundable ? [{
            kind: 'form' as const, id: 'refund', title: 'Refund', action: `${pages.base}/${order.id}/refund`, submit: 'Refund order', fields: [],
            confirm: `Refund order #${order.id}? The price goes back to the balance, the cashback is taken back and granted roles are shortened.`,
          }] : []),
          ...await deliveries(Number(order.id)),
        ],
      };
    });

    /** The order's commands on game servers and whether each ran, with redeliver, when the delivery feature runs. */
    const deliveries = async (orderId: number): Promise<ConsoleBlock[]> => {
      const delivery = ctx.services.find(deliveryRef);
      if (!delivery) return [];
      const [rows, servers] = await Promise.all([delivery.listQueue({ orderId, page: 1, perPage: 200 }), delivery.listServers()]);
      const serverNames = new Map(servers.map((s) => [s.id, s.name]));
      return [{
        kind: 'table', caption: 'Delivery', empty: 'No command was queued for this order.',
        columns: [
          { key: 'server', label: 'Game server' }, { key: 'command', label: 'Command' }, { key: 'trigger', label: 'On' }, { key: 'status', label: 'Status' },
          { key: 'tries', label: 'Tries', numeric: true }, { key: 'error', label: 'Last error' }, { key: 'updated', label: 'Updated' }, { key: 'action',
            label: 'Action' },
        ],
        rows: rows.map((r) => ({
          server: serverNames.get(r.serverID) ?? `#${r.serverID}`, command: r.command, trigger: r.trigger, status: r.status, tries: r.tries,
          error: r.lastError ?? '', updated: r.updatedDate,
          action: ['done', 'failed', 'cancelled'].includes(r.status)
            ? { action: `${pages.base}/${orderId}/deliveries/${r.id}/redeliver`, label: `Redeliver command ${r.id}`,
              confirm: `Run "${r.command}" on ${serverNames.get(r.serverID) ?? 'its server'} again?` }
            : '',
        })),
      }];
    };

    pages.post('/:id/deliveries/:queueId/redeliver', async ({ params }) => {
      const orderId = idOf(params.id);
      const delivery = ctx.services.find(deliveryRef);
      const row = delivery ? (await delivery.listQueue({ orderId, page: 1, perPage: 200 })).find((r) => r.id === params.queueId) : undefined;
      if (!delivery || !row) throw new DomainError('ORDER_NOT_FOUND', `Order ${orderId} has no queued command ${params.queueId}.`);
      try {
        await delivery.redeliver(Number(row.id));
      } catch (err) {
        if (err instanceof DomainError && err.code === 'CONFLICT') return { redirect: `${pages.base}/${orderId}`, notice: `Not redelivered: ${err.message}` };
        throw err;
      }
      return { redirect: `${pages.base}/${orderId}`, notice: `Command ${row.id} is waiting to be delivered again.` };
    });

    pages.post('/:id/refund', async ({ params, staff }: ConsoleRequest) => {
      const id = /^[0-9]{1,15}$/.test(params.id!) ? Number(params.id) : 0;
      try {
        await store.refund(id, `console:${staff.username}`);
      } catch (err) {
        if (err instanceof DomainError && err.code !== 'ORDER_NOT_FOUND') return { redirect: `${pages.base}/${id}`, notice: `Not refunded: ${err.message}` };
        throw err;
      }
      return { redirect: `${pages.base}/${id}`, notice: `Order #${id} refunded.` };
    });
  },
};
