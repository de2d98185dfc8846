import { c, unique, type Venue } from './fixtures.js';
import { A, type Case, type World } from './world.js';

// Readers plugged into the box (docs/bridge.md): the devices' record. Paths that are not there: the
// bridge waits for them, which is all the wire needs. A device from the config file is made
// through the service, as the config file's devices are at start.

export function bridgeCases(w: World, v: Venue): Case[] {
  const body = () => ({
    name: `Door ${unique()}`,
    path: `/dev/ttyUSB${unique()}`,
    reader_identifier: `WIRE-${unique()}`,
    access_point_id: v.door,
    framing: 'rdm6300',
    feedback: { grant: '06', deny: '15' },
  });
  const device = () => w.create(`${A}/bridge/devices`, body());
  const fromConfig = async () => {
    const projectId = (await w.api('GET', A)).body.data.id as number;
    return w.gh.app.services.bridge.devices.create(projectId, { ...body(), framing: 'line' }, 'config').id;
  };
  return [
    c('bridge-devices.index', 200, 'the devices, with whether HID works here', () =>
      w.api('GET', `${A}/bridge/devices`),
    ),
    c('bridge-devices.store', 201, 'a serial reader by path', () => w.api('POST', `${A}/bridge/devices`, body())),
    c('bridge-devices.store', 422, 'a path that is not a serial port (a terminal)', () =>
      w.api('POST', `${A}/bridge/devices`, { ...body(), path: '/dev/pts/0' }),
    ),
    c('bridge-devices.store', 422, 'both a path and USB ids', () =>
      w.api('POST', `${A}/bridge/devices`, { ...body(), match: { vendor_id: '0403', product_id: '6001' } }),
    ),
    c('bridge-devices.show', 200, 'a device with its state', async () =>
      w.api('GET', `${A}/bridge/devices/${await device()}`),
    ),
    c('bridge-devices.show', 404, 'an id that names nothing', () => w.api('GET', `${A}/bridge/devices/999999`)),
    c('bridge-devices.update', 200, 'disabled', async () =>
      w.api('PUT', `${A}/bridge/devices/${await device()}`, { enabled: false }),
    ),
    c('bridge-devices.update', 422, 'feedback that is not hex', async () =>
      w.api('PUT', `${A}/bridge/devices/${await device()}`, { feedback: { grant: 'beep' } }),
    ),
    c('bridge-devices.update', 404, 'an id that names nothing', () =>
      w.api('PUT', `${A}/bridge/devices/999999`, { enabled: false }),
    ),
    c('bridge-devices.update', 409, 'a device from the config file', async () =>
      w.api('PUT', `${A}/bridge/devices/${await fromConfig()}`, { enabled: false }),
    ),
    c('bridge-devices.destroy', 204, 'a device', async () => w.api('DELETE', `${A}/bridge/devices/${await device()}`)),
    c('bridge-devices.destroy', 404, 'an id that names nothing', () => w.api('DELETE', `${A}/bridge/devices/999999`)),
    c('bridge-devices.destroy', 409, 'a device from the config file', async () =>
      w.api('DELETE', `${A}/bridge/devices/${await fromConfig()}`),
    ),
  ];
}
