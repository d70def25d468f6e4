import { defineMigration } from '../../../core/db.ts';

export default defineMigration({
  name: '20261127171235_delivery_server_queue_index',
  sqlite: [
    'drop index `delivery_queue_server_id_status_index`',
    'create index `delivery_queue_server_queue_index` on `delivery_queue` (`server_id`, `status`, `id`, `require_online`, `not_before`, `tries`, `updated_date`)',
  ],
  mysql: [
    'alter table `delivery_queue` drop index `delivery_queue_server_id_status_index`',
    'alter table `delivery_queue` add index `delivery_queue_server_queue_index` (`server_id`, `status`, `id`, `require_online`, `not_before`, `tries`, `updated_date`)',
  ],
});
