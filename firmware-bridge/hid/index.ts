export {
  KEYBOARD_LAYOUTS,
  type KeyboardLayoutName,
  type KeyboardOptions,
  keyboardDecoder,
  layoutTable,
} from './keyboard.js';
export { posScannerDecoder } from './pos-scanner.js';
export { type HidScan, MAX_SCAN_CHARS, type ReportDecoder } from './types.js';
