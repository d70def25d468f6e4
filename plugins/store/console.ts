/**
 * The store's Catalogue section of the staff console (categories and products; the Orders section
 * is orders-console.ts). Forms are checked with the admin API's own body schemas and
 * call the same catalogue and order code, so a page refuses exactly what the API refuses.
 */
import type { Static } from '@sinclair/typebox';
import { errorsFor, type ConsoleCell, type ConsolePage, type ConsoleSection, idOf } from '../../core/console.ts';
import { DomainError } from '../../core/errors.ts';
import { displayTimestamp, formatMoney, now } from '../../core/format.ts';
import { toBool } from '../../core/schemas.ts';
import { usersRef } from '../users/contract.ts';
import { CategoryCreateBody, CategoryPatchBody, ProductCreateBody, ProductPatchBody, RulesPatchBody, categoryInput, productInput } from './schemas.ts';
import { storedImage, type Category, type Product } from './contract.ts';
import { IMAGE_ACCEPT, type ProductImages } from './images.ts';
import type { DbCatalogue } from './catalogue.ts';
import {
  type CataloguePages,
  type Shown,
  categoryFields,
  checkbox,
  parseVariables,
  productFields,
  showVariables,
  sizeText,
  treeOrder,
  yes,
} from './console-forms.ts';

export const catalogueSection: ConsoleSection<unknown, { catalogue: DbCatalogue; images: ProductImages }> = {
  id: 'catalogue',
  title: 'Catalogue',
  order: 20,
  pages(pages, ctx, { catalogue, images }) {
    const cp: CataloguePages = { pages, store: catalogue, images, users: ctx.services.get(usersRef), tz: () => ctx.settings.get().timezone };
    pages.get('', async () => overviewPage(cp));
    categoryRoutes(cp);
    productRoutes(cp);
    productPartRoutes(cp);
  },
};

/** The catalogue: categories and products listed, and the forms that create them. */
async function overviewPage(cp: CataloguePages, extra: { category?: Shown; product?: Shown } = {}): Promise<ConsolePage> {
  const { pages, store, tz } = cp;
  const [categories, products] = await Promise.all([store.categories(), store.products()]);
  const names = new Map(categories.map((c) => [c.id, c.name]));
  const at = now();
  return {
    title: 'Catalogue',
    status: extra.category || extra.product ? 422 : 200,
    blocks: [
      {
        kind: 'table',
        caption: 'Categories',
        empty: 'No category yet: create the first one below.',
        columns: [
          { key: 'name', label: 'Name' },
          { key: 'slug', label: 'Slug' },
          { key: 'products', label: 'Products', numeric: true },
          { key: 'active', label: 'Active' },
          { key: 'up', label: 'Move up' },
          { key: 'down', label: 'Move down' },
          { key: 'delete', label: 'Delete' },
        ],
        rows: treeOrder(categories).map(({ category: c, depth }) => {
          const siblings = categories.filter((x) => x.parentId === c.parentId);
          const at = siblings.indexOf(c);
          return {
            name: { text: `${'— '.repeat(depth)}${c.name}`, href: `${pages.base}/categories/${c.id}` },
            slug: c.slug,
            active: yes(c.isActive),
            products: String(products.filter((p) => p.categoryId === c.id).length),
            up: at > 0 ? { action: `${pages.base}/categories/${c.id}/move?to=up`, label: `Move ${c.name} up` } : '',
            down: at < siblings.length - 1 ? { action: `${pages.base}/categories/${c.id}/move?to=down`, label: `Move ${c.name} down` } : '',
            delete: { action: `${pages.base}/categories/${c.id}/delete`, label: `Delete ${c.name}`, confirm: `Delete the category ${c.name}?` },
          };
        }),
      },
      {
        kind: 'table',
        caption: 'Products',
        empty: 'No product yet.',
        columns: [
          { key: 'name', label: 'Name' },
          { key: 'category', label: 'Category' },
          { key: 'price', label: 'Price', numeric: true },
          { key: 'discount', label: 'Discount', numeric: true },
          { key: 'stock', label: 'Stock', numeric: true },
          { key: 'active', label: 'On sale' },
        ],
        rows: products.map(
          (p): Record<string, ConsoleCell> => ({
            name: { text: p.name, href: `${pages.base}/products/${p.id}` },
            category: names.get(p.categoryId) ?? String(p.categoryId),
            price: formatMoney(p.price),
            discount:
              p.discountedPrice > 0 && p.discountExpiryDate > at
                ? `${formatMoney(p.discountedPrice)} until ` + `${displayTimestamp(p.discountExpiryDate, tz())}`
                : '',
            stock: p.stock === -1 ? 'unlimited' : String(p.stock),
            active: yes(p.isActive),
          }),
        ),
      },
      {
        kind: 'form',
        id: 'new-category',
        title: 'New category',
        action: `${pages.base}/categories`,
        submit: 'Create category',
        values: extra.category?.values ?? { isActive: 'true', parentID: '0' },
        errors: extra.category?.errors,
        fields: categoryFields(categories),
      },
      {
        kind: 'form',
        id: 'new-product',
        title: 'New product',
        action: `${pages.base}/products`,
        submit: 'Create product',
        values: extra.product?.values ?? { isActive: 'true', stock: '-1', duration: '-1', giveRoleID: '0' },
        errors: extra.product?.errors,
        fields: await productFields(cp, categories),
      },
    ],
  };
}

/** A category's edit form. */
async function categoryPage({ pages, store }: CataloguePages, c: Category, edit?: Shown): Promise<ConsolePage> {
  return {
    title: c.name,
    status: edit ? 422 : 200,
    blocks: [
      { kind: 'links', items: [{ label: 'Back to the catalogue', href: pages.base }] },
      {
        kind: 'form',
        id: 'edit-category',
        title: 'Edit category',
        action: `${pages.base}/categories/${c.id}`,
        submit: 'Save category',
        values: edit?.values ?? { name: c.name, slug: c.slug, parentID: String(c.parentId), priority: String(c.priority), isActive: String(c.isActive) },
        errors: edit?.errors,
        fields: categoryFields(await store.categories(), c.id),
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
    title: p.name,
    status: edit || rulesEdit || imageError ? 422 : 200,
    blocks: [
      ...(commands ? [{ kind: 'links' as const, items: [{ label: 'Commands run on game servers when this product is bought', href: commands }] }] : []),
      {
        kind: 'form',
        id: 'edit-product',
        title: 'Edit product',
        action: `${pages.base}/products/${p.id}`,
        submit: 'Save product',
        values: edit?.values ?? {
          name: p.name,
          categoryID: String(p.categoryId),
          price: formatMoney(p.price),
          discountedPrice: p.discountedPrice ? formatMoney(p.discountedPrice) : '',
          discountExpiryDate: p.discountedPrice ? displayTimestamp(p.discountExpiryDate, tz()) : '',
          stock: String(p.stock),
          giveRoleID: String(p.giveRoleId),
          duration: String(p.duration),
          variables: showVariables(p.variables),
          details: p.details,
          priority: String(p.priority),
          isActive: String(p.isActive),
          isFeaturedProduct: String(p.isFeatured),
          stockShown: String(p.stock),
        },
        errors: edit?.errors,
        fields: [...(await productFields(cp, await store.categories())), { name: 'stockShown', label: 'Stock shown', type: 'hidden' }],
      },
      ...(storedImage(p)
        ? [{ kind: 'links' as const, heading: 'Image', items: [{ label: `Current image (${p.imageType.toUpperCase()})`, href: storedImage(p)! }] }]
        : []),
      {
        kind: 'form',
        id: 'product-image',
        title: storedImage(p) ? 'Replace the image' : 'Upload an image',
        action: `${pages.base}/products/${p.id}/image`,
        submit: 'Upload image',
        errors: imageError ? { image: imageError } : undefined,
        fields: [
          {
            name: 'image',
            label: 'Image file',
            type: 'file',
            required: true,
            accept: IMAGE_ACCEPT,
            hint: `PNG, JPEG, WebP or GIF, at most ${sizeText(images.maxBytes)}.`,
          },
        ],
      },
      {
        kind: 'form',
        id: 'product-rules',
        title: 'Purchase rules',
        action: `${pages.base}/products/${p.id}/rules`,
        submit: 'Save rules',
        values: rulesEdit?.values ?? {
          requiredProductID: String(current.requiredProductId),
          requireLinkedAccount: String(current.requireLinkedAccount),
          preventDowngrade: String(current.preventDowngrade),
        },
        errors: rulesEdit?.errors,
        fields: [
          {
            name: 'requiredProductID',
            label: 'Requires having bought',
            type: 'select',
            options: [{ value: '0', label: 'nothing' }, ...products.filter((x) => x.id !== p.id).map((x) => ({ value: String(x.id), label: x.name }))],
          },
          { name: 'requireLinkedAccount', label: 'Requires a linked chat account', type: 'checkbox' },
          { name: 'preventDowngrade', label: 'No downgrade: refused to a player holding a higher role from a product of this category', type: 'checkbox' },
        ],
      },
      {
        kind: 'form',
        id: 'delete-product',
        title: 'Delete product',
        action: `${pages.base}/products/${p.id}/delete`,
        submit: 'Delete product',
        fields: [],
        confirm: `Delete ${p.name}? Its orders keep what was bought.`,
      },
    ],
  };
}

/** The category pages' handlers: create, delete, edit, and move among siblings. */
function categoryRoutes(cp: CataloguePages): void {
  const { pages, store } = cp;
  pages.post(
    '/categories',
    async ({ body, invalid, form }) => {
      const values = { ...form, isActive: checkbox(form, 'isActive') };
      if (invalid) return overviewPage(cp, { category: { values, errors: invalid } });
      const b = body as Static<typeof CategoryCreateBody>;
      try {
        const c = await store.createCategory({ ...categoryInput(b), name: b.name, isActive: toBool(values.isActive) });
        return { redirect: pages.base, notice: `Category ${c.name} created.` };
      } catch (err) {
        return overviewPage(cp, {
          category: { values, errors: errorsFor(err, Object.keys(CategoryCreateBody.properties), { CATEGORY_NOT_FOUND: 'parentID' }) },
        });
      }
    },
    { body: CategoryCreateBody },
  );

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

  pages.post(
    '/categories/:id',
    async ({ params, body, invalid, form }) => {
      const c = await store.requireCategory(idOf(params.id));
      const values = { ...form, isActive: checkbox(form, 'isActive') };
      if (invalid) return categoryPage(cp, c, { values, errors: invalid });
      const b = body as Static<typeof CategoryPatchBody>;
      try {
        // An emptied slug (or priority) keeps the current one.
        const saved = await store.updateCategory(c.id, { ...categoryInput(b), isActive: toBool(values.isActive) });
        return { redirect: pages.base, notice: `Category ${saved.name} saved.` };
      } catch (err) {
        return categoryPage(cp, c, {
          values,
          errors: errorsFor(err, Object.keys(CategoryPatchBody.properties), { CATEGORY_NOT_FOUND: 'parentID', CONFLICT: 'slug' }),
        });
      }
    },
    { body: CategoryPatchBody },
  );

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

/** The product's form fields sent as the API would get them: variables as a list, unticked boxes as false. */
const productBody = (form: Record<string, string>) => ({
  ...form,
  isActive: checkbox(form, 'isActive'),
  isFeaturedProduct: checkbox(form, 'isFeaturedProduct'),
});
const productErrors = (err: unknown) =>
  errorsFor(err, Object.keys(ProductCreateBody.properties), { CATEGORY_NOT_FOUND: 'categoryID', ROLE_NOT_FOUND: 'giveRoleID', INVALID_AMOUNT: 'price' });

/** The product pages' handlers: create, show, edit and delete (its image and rules: productPartRoutes). */
function productRoutes(cp: CataloguePages): void {
  const { pages, store, tz } = cp;

  pages.post(
    '/products',
    async ({ body, invalid, form }) => {
      const values = productBody(form);
      if (invalid) return overviewPage(cp, { product: { values, errors: invalid } });
      try {
        const b = { ...(body as Static<typeof ProductCreateBody>), variables: parseVariables(form.variables ?? '') };
        const input = productInput(b, tz());
        const p = await store.createProduct({
          ...input,
          categoryId: b.categoryID,
          name: b.name,
          price: input.price!,
          isActive: toBool(values.isActive),
          isFeatured: toBool(values.isFeaturedProduct),
        });
        return { redirect: `${pages.base}/products/${p.id}`, notice: `Product ${p.name} created.` };
      } catch (err) {
        return overviewPage(cp, { product: { values, errors: productErrors(err) } });
      }
    },
    { body: ProductCreateBody },
  );

  pages.get('/products/:id', async ({ params }) => productPage(cp, await store.requireProduct(Number(params.id))));

  pages.post(
    '/products/:id',
    async ({ params, body, invalid, form }) => {
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
    },
    { body: ProductPatchBody },
  );

  pages.post('/products/:id/delete', async ({ params }) => {
    const p = await store.requireProduct(Number(params.id));
    await store.deleteProduct(p.id);
    return { redirect: pages.base, notice: `Product ${p.name} deleted.` };
  });
}

/** A product's image upload and its purchase rules. */
function productPartRoutes(cp: CataloguePages): void {
  const { pages, store, images } = cp;
  pages.post(
    '/products/:id/image',
    async ({ params, upload }) => {
      const p = await store.requireProduct(idOf(params.id));
      if (!upload?.data.length) return productPage(cp, p, undefined, undefined, 'Choose an image file to upload.');
      if (upload.tooLarge) return productPage(cp, p, undefined, undefined, `The file is larger than ${sizeText(images.maxBytes)}; nothing was changed.`);
      try {
        await store.updateProduct(p.id, await images.save(upload.data));
      } catch (err) {
        return productPage(cp, p, undefined, undefined, errorsFor(err, ['image']).image ?? (err as Error).message);
      }
      return { redirect: `${pages.base}/products/${p.id}`, notice: `Image of ${p.name} saved.` };
    },
    { upload: { field: 'image', maxBytes: images.maxBytes } },
  );

  pages.post(
    '/products/:id/rules',
    async ({ params, body, invalid, form }) => {
      const p = await store.requireProduct(idOf(params.id));
      const values = { ...form, requireLinkedAccount: checkbox(form, 'requireLinkedAccount'), preventDowngrade: checkbox(form, 'preventDowngrade') };
      if (invalid) return productPage(cp, p, undefined, { values, errors: invalid });
      const b = body as Static<typeof RulesPatchBody>;
      try {
        await store.setRules(p.id, {
          requiredProductId: b.requiredProductID ?? 0,
          requireLinkedAccount: toBool(values.requireLinkedAccount),
          preventDowngrade: toBool(values.preventDowngrade),
        });
        return { redirect: `${pages.base}/products/${p.id}`, notice: `Purchase rules of ${p.name} saved.` };
      } catch (err) {
        return productPage(cp, p, undefined, { values, errors: errorsFor(err, ['requiredProductID'], { PRODUCT_NOT_FOUND: 'requiredProductID' }) });
      }
    },
    { body: RulesPatchBody },
  );
}
