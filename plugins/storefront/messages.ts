/**
 * Every player-facing string of the storefront, by language. A language is complete when it has
 * every key English has (a test checks); `{name}` marks a value put in.
 */
const en = {
  'nav.home': 'Home', 'nav.basket': 'Basket', 'nav.account': 'My account', 'nav.signIn': 'Sign in',
  'nav.register': 'Register', 'nav.signOut': 'Sign out', 'nav.skip': 'Skip to content', 'nav.main': 'Main', 'nav.footer': 'Links',
  'nav.breadcrumb': 'You are here',
  'home.title': 'Welcome', 'home.featured': 'Featured', 'home.categories': 'Categories', 'home.donations': 'Top supporters this month',
  'home.latest': 'Latest supporters', 'home.votes': 'Vote for us', 'home.nothing': 'Nothing to show yet.',
  'category.subcategories': 'Subcategories', 'category.products': 'Products', 'category.empty': 'No products in this category yet.',
  'product.price': 'Price', 'product.was': 'was {price}', 'product.until': 'Offer ends {date}', 'product.stockLeft': '{count} left',
  'product.soldOut': 'Sold out', 'product.quantity': 'Quantity', 'product.add': 'Add to basket', 'product.rules': 'Before you buy',
  'product.rule.required': 'You must have bought {name} first.', 'product.rule.linked': 'You need a linked chat account.',
  'product.rule.downgrade': 'Not for sale to players holding a higher rank of this category.', 'product.description': 'Description',
  'product.noImage': 'No picture', 'product.choose': 'Choose…',
  'search.title': 'Search', 'search.label': 'Product name', 'search.submit': 'Search', 'search.results': 'Results for “{q}”',
  'search.none': 'No product matches “{q}”.', 'search.short': 'Type at least {min} characters.',
  'basket.title': 'Basket', 'basket.empty': 'Your basket is empty.', 'basket.product': 'Product', 'basket.unit': 'Unit price',
  'basket.quantity': 'Quantity', 'basket.lineTotal': 'Total', 'basket.update': 'Update', 'basket.remove': 'Remove',
  'basket.total': 'Basket total', 'basket.added': '{name} is in your basket.', 'basket.updated': 'Your basket was updated.',
  'basket.removed': 'Removed from your basket.', 'basket.gone': 'A product is no longer for sale and was taken out of your basket.',
  'basket.full': 'Your basket is full.', 'basket.payBalance': 'Pay {total} from my balance', 'basket.balance': 'Your balance: {balance}',
  'basket.signInToPay': 'Sign in to pay from your balance.', 'basket.priceNote': 'Prices are checked again when you pay.',
  'basket.variables': 'Options',
  'checkout.done': 'Thank you! Your order #{id} is paid.',
  'signIn.title': 'Sign in', 'signIn.username': 'Username', 'signIn.password': 'Password', 'signIn.code': 'Two-factor code',
  'signIn.codeHint': 'Only if your account uses two-factor sign-in: the 6 digits your authenticator app shows.',
  'signIn.submit': 'Sign in', 'signIn.wrong': 'Wrong username or password.',
  'signIn.codeNeeded': 'Your account uses two-factor sign-in: enter the code from your authenticator app.',
  'signIn.codeWrong': 'The code is wrong or was used already; wait for the next one.', 'signIn.done': 'Welcome back, {name}!',
  'signIn.noAccount': 'No account yet?', 'signIn.required': 'Sign in to see this page.',
  'register.title': 'Create an account', 'register.email': 'Email', 'register.submit': 'Create account',
  'register.usernameHint': '3 to 16 letters, digits or _ — your in-game name.', 'register.passwordHint': '{min} to {max} characters.',
  'register.done': 'Welcome, {name}! Your account is ready.', 'register.haveAccount': 'Have an account already?',
  'signIn.forgot': 'Forgot your password?', 'signIn.unverified': 'Confirm your email address first: open the link we mailed you.',
  'signIn.resend': 'Mail me the link again',
  'register.verify': 'Welcome, {name}! We mailed you a link: open it to confirm your email address, then sign in.',
  'forgot.title': 'Forgot your password', 'forgot.login': 'Username or email', 'forgot.submit': 'Mail me a reset link',
  'forgot.sentTitle': 'Check your inbox',
  'forgot.sent': 'If an account with an email address matches, a link to reset its password is on its way. It works once, for a limited time.',
  'reset.title': 'Choose a new password', 'reset.password': 'New password', 'reset.submit': 'Save password',
  'reset.done': 'Your password is changed: sign in with it.', 'reset.invalid': 'This link is unknown, used already or expired. Ask for a new one.',
  'verify.title': 'Email address', 'verify.done': 'Your email address is confirmed: you can sign in now.',
  'verify.invalid': 'This link is unknown, used already or expired. Sign in to have a new one mailed to you.',
  'verify.resent': 'If this account still waits for its confirmation, a new link is on its way.',
  'mail.unavailable': 'This site sends no mail.',
  'signOut.done': 'You are signed out.',
  'account.title': 'My account', 'account.balance': 'Balance', 'account.ledger': 'Recent balance changes', 'account.date': 'Date',
  'account.change': 'Change', 'account.reason': 'Reason', 'account.after': 'Balance after', 'account.orders': 'My orders',
  'account.noOrders': 'No orders yet.', 'account.chat': 'Chat account', 'account.chatLinked': 'Linked: {id}',
  'account.chatNone': 'No chat account is linked.', 'account.twoFactor': 'Two-factor sign-in', 'account.on': 'On', 'account.off': 'Off',
  'account.tickets': 'Support tickets', 'account.noLedger': 'No balance changes yet.',
  'order.title': 'Order #{id}', 'order.number': 'Order', 'order.date': 'Date', 'order.total': 'Total', 'order.status': 'Delivery',
  'order.items': 'What you bought', 'order.view': 'Order #{id}',
  'order.status.waiting': 'Paid — waiting for the game server', 'order.status.delivered': 'Delivered to {servers}',
  'order.status.failed': 'Delivery failed — contact support', 'order.status.refunded': 'Refunded', 'order.status.complete': 'Complete',
  'order.live': 'This updates by itself.',
  'tickets.title': 'Support', 'tickets.open': 'Open a ticket', 'tickets.category': 'Category', 'tickets.subject': 'Subject',
  'tickets.message': 'Message', 'tickets.send': 'Open ticket', 'tickets.none': 'You have no tickets.',
  'tickets.created': 'Your ticket is open; staff will answer here.',
  'tickets.reply': 'Answer', 'tickets.replySend': 'Send answer', 'tickets.close': 'Close ticket', 'tickets.closed': 'The ticket is closed.',
  'tickets.replied': 'Your answer was sent.', 'tickets.you': 'You', 'tickets.staff': 'Staff', 'tickets.updated': 'Updated',
  'tickets.status.1': 'Open', 'tickets.status.2': 'Answered', 'tickets.status.3': 'Awaiting staff', 'tickets.status.4': 'Closed',
  'tickets.statusLabel': 'Status', 'tickets.unavailable': 'The support desk is not available.',
  'error.notFound': 'Not found', 'error.notFoundText': 'There is nothing at this address.',
  'error.csrf': 'This form expired; it has been renewed. Please try again.',
  'error.server': 'Something went wrong on our side (request {id}). Nothing was changed.', 'error.title': 'Error',
  'error.rateLimited': 'Too many attempts; try again in {after}.', 'error.required': 'Fill in this field.',
  'error.controlCharacter': 'line breaks and other control characters are not allowed.',
  'error.OUT_OF_STOCK': 'A product in your basket is sold out or has too few left.', 'error.INSUFFICIENT_BALANCE': 'Your balance is too low for this basket.',
  'error.REQUIRED_PRODUCT': 'A product in your basket must be bought after another one.',
  'error.REQUIRED_LINKED_ACCOUNT': 'A product in your basket needs a linked chat account.',
  'error.DOWNGRADE_NOT_ALLOWED': 'You hold a higher rank than one in your basket.', 'error.INVALID_VARIABLE': 'Check the options you chose: {detail}',
  'error.PRODUCT_NOT_FOUND': 'A product in your basket is no longer for sale.', 'error.INVALID_QUANTITY': 'Choose a quantity from 1 to {max}.',
  'error.USERNAME_ALREADY_EXIST': 'This username is taken.', 'error.EMAIL_ALREADY_EXIST': 'This email is used by another account.',
  'error.REGISTER_LIMIT': 'No more accounts may be registered from your address.', 'error.INVALID_USERNAME': 'Use 3 to 16 letters, digits or _.',
  'error.INVALID_EMAIL': 'This email address is not valid.', 'error.INVALID_PASSWORD': 'The password must be {min} to {max} characters long.',
  'error.TICKET_CLOSED': 'This ticket is closed.', 'error.tooLong': 'At most {max} characters.',
  'pay.title': 'On to {gateway}', 'pay.text': 'You are sent to {gateway} to pay. If nothing happens, use the button.', 'pay.continue': 'Continue to {gateway}',
  'payment.title': 'Your payment', 'payment.status.pending': 'Waiting for your payment of {amount} to arrive.',
  'payment.status.completed': 'Paid: {amount}. Thank you!',
  'payment.status.credited': 'Paid, but the purchase was no longer possible: {amount} went to your balance.',
  'payment.status.refund-due': 'Paid, but the purchase was no longer possible: {amount} will be refunded.', 'payment.status.refunded': 'Refunded: {amount}.',
  'payment.status.disputed': 'This payment is disputed.', 'payment.status.expired': 'Not paid in time: this payment expired.',
  'payment.guestHint': 'Register an account named {name} to see this order among yours.',
  'guest.name': 'In-game name', 'guest.hint': 'The purchase is delivered to this name: 3 to 16 letters, digits or _.',
  'basket.payDirect': 'Pay directly', 'basket.payWith': 'Pay {total} with {gateway}',
  'topup.title': 'Top up your balance', 'topup.none': 'No top-up is on offer right now.', 'topup.credits': '{credits} of credit',
  'topup.pay': '{name} with {gateway}',
  'account.topUp': 'Top up my balance',
  'error.INVALID_GUEST_NAME': 'Type your in-game name: 3 to 16 letters, digits or _.',
  'error.GUEST_CHECKOUT_DISABLED': 'Sign in to buy: this store takes no guest orders.',
  'error.GATEWAY_ERROR': 'The payment provider did not answer; try again in a moment.', 'error.GATEWAY_UNAVAILABLE': 'This way of paying is not available.',
  'footer.currency': 'Prices in {currency}.',
  'codes.title': 'Coupon and gift card', 'codes.coupon': 'Coupon code', 'codes.giftCard': 'Gift card code', 'codes.apply': 'Apply',
  'codes.hint': 'Empty both to take them off. They apply to whichever way you pay.', 'codes.applied': 'Your codes apply to this basket.',
  'codes.removed': 'No code applies to your basket now.', 'codes.couponLine': 'Coupon {code}', 'codes.giftCardLine': 'Gift card {code}',
  'codes.tooMany': 'Too many wrong codes: no code is accepted for now. Try again in {after}.',
    'basket.toPay': 'To pay',
  'error.PROMOTION_INVALID': 'This code does not apply: {detail}', 'error.PROMOTION_USED_UP': 'Someone was quicker: {detail}',
  'home.goal': 'Community goal', 'home.goalText': '{raised} of {target} raised ({percent}%)',
} as const;

export type MessageKey = keyof typeof en;
export type Catalogue = Record<MessageKey, string>;

const de: Catalogue = {
  'nav.home': 'Start', 'nav.basket': 'Warenkorb', 'nav.account': 'Mein Konto', 'nav.signIn': 'Anmelden',
  'nav.register': 'Registrieren', 'nav.signOut': 'Abmelden', 'nav.skip': 'Zum Inhalt springen', 'nav.main': 'Hauptmenü', 'nav.footer': 'Links',
  'nav.breadcrumb': 'Sie sind hier',
  'home.title': 'Willkommen', 'home.featured': 'Empfohlen', 'home.categories': 'Kategorien', 'home.donations': 'Top-Unterstützer diesen Monat',
  'home.latest': 'Neueste Unterstützer', 'home.votes': 'Stimme für uns ab', 'home.nothing': 'Noch nichts zu zeigen.',
  'category.subcategories': 'Unterkategorien', 'category.products': 'Produkte', 'category.empty': 'In dieser Kategorie gibt es noch keine Produkte.',
  'product.price': 'Preis', 'product.was': 'statt {price}', 'product.until': 'Angebot endet am {date}', 'product.stockLeft': 'Noch {count} verfügbar',
  'product.soldOut': 'Ausverkauft', 'product.quantity': 'Anzahl', 'product.add': 'In den Warenkorb', 'product.rules': 'Vor dem Kauf',
  'product.rule.required': 'Du musst zuerst {name} gekauft haben.', 'product.rule.linked': 'Du brauchst ein verknüpftes Chat-Konto.',
  'product.rule.downgrade': 'Nicht für Spieler mit einem höheren Rang dieser Kategorie.', 'product.description': 'Beschreibung',
  'product.noImage': 'Kein Bild', 'product.choose': 'Bitte wählen…',
  'search.title': 'Suche', 'search.label': 'Produktname', 'search.submit': 'Suchen', 'search.results': 'Ergebnisse für „{q}“',
  'search.none': 'Kein Produkt passt zu „{q}“.', 'search.short': 'Gib mindestens {min} Zeichen ein.',
  'basket.title': 'Warenkorb', 'basket.empty': 'Dein Warenkorb ist leer.', 'basket.product': 'Produkt', 'basket.unit': 'Stückpreis',
  'basket.quantity': 'Anzahl', 'basket.lineTotal': 'Summe', 'basket.update': 'Ändern', 'basket.remove': 'Entfernen',
  'basket.total': 'Gesamtsumme', 'basket.added': '{name} liegt in deinem Warenkorb.', 'basket.updated': 'Dein Warenkorb wurde geändert.',
  'basket.removed': 'Aus dem Warenkorb entfernt.', 'basket.gone': 'Ein Produkt ist nicht mehr erhältlich und wurde aus dem Warenkorb genommen.',
  'basket.full': 'Dein Warenkorb ist voll.', 'basket.payBalance': '{total} mit meinem Guthaben bezahlen', 'basket.balance': 'Dein Guthaben: {balance}',
  'basket.signInToPay': 'Melde dich an, um mit deinem Guthaben zu bezahlen.', 'basket.priceNote': 'Die Preise werden beim Bezahlen erneut geprüft.',
  'basket.variables': 'Optionen',
  'checkout.done': 'Danke! Deine Bestellung #{id} ist bezahlt.',
  'signIn.title': 'Anmelden', 'signIn.username': 'Benutzername', 'signIn.password': 'Passwort', 'signIn.code': 'Bestätigungscode',
  'signIn.codeHint': 'Nur wenn dein Konto die Zwei-Faktor-Anmeldung nutzt: die 6 Ziffern aus deiner Authenticator-App.',
  'signIn.submit': 'Anmelden', 'signIn.wrong': 'Benutzername oder Passwort falsch.',
  'signIn.codeNeeded': 'Dein Konto nutzt die Zwei-Faktor-Anmeldung: gib den Code aus deiner Authenticator-App ein.',
  'signIn.codeWrong': 'Der Code ist falsch oder wurde schon benutzt; warte auf den nächsten.', 'signIn.done': 'Willkommen zurück, {name}!',
  'signIn.noAccount': 'Noch kein Konto?', 'signIn.required': 'Melde dich an, um diese Seite zu sehen.',
  'register.title': 'Konto erstellen', 'register.email': 'E-Mail', 'register.submit': 'Konto erstellen',
  'register.usernameHint': '3 bis 16 Buchstaben, Ziffern oder _ – dein Name im Spiel.', 'register.passwordHint': '{min} bis {max} Zeichen.',
  'register.done': 'Willkommen, {name}! Dein Konto ist bereit.', 'register.haveAccount': 'Schon ein Konto?',
  'signIn.forgot': 'Passwort vergessen?', 'signIn.unverified': 'Bestätige zuerst deine E-Mail-Adresse: öffne den Link, den wir dir gemailt haben.',
  'signIn.resend': 'Link erneut mailen',
  'register.verify': 'Willkommen, {name}! Wir haben dir einen Link gemailt: öffne ihn, um deine E-Mail-Adresse zu bestätigen, und melde dich dann an.',
  'forgot.title': 'Passwort vergessen', 'forgot.login': 'Benutzername oder E-Mail', 'forgot.submit': 'Link zum Zurücksetzen mailen',
  'forgot.sentTitle': 'Sieh in dein Postfach',
  'forgot.sent': 'Wenn ein Konto mit E-Mail-Adresse passt, ist ein Link zum Zurücksetzen des Passworts unterwegs. Er gilt einmal und nur für begrenzte Zeit.',
  'reset.title': 'Neues Passwort wählen', 'reset.password': 'Neues Passwort', 'reset.submit': 'Passwort speichern',
  'reset.done': 'Dein Passwort ist geändert: melde dich damit an.',
  'reset.invalid': 'Dieser Link ist unbekannt, schon benutzt oder abgelaufen. Fordere einen neuen an.',
  'verify.title': 'E-Mail-Adresse', 'verify.done': 'Deine E-Mail-Adresse ist bestätigt: du kannst dich jetzt anmelden.',
  'verify.invalid': 'Dieser Link ist unbekannt, schon benutzt oder abgelaufen. Melde dich an, um einen neuen zu bekommen.',
  'verify.resent': 'Wenn dieses Konto noch auf seine Bestätigung wartet, ist ein neuer Link unterwegs.',
  'mail.unavailable': 'Diese Seite versendet keine Mails.',
  'signOut.done': 'Du bist abgemeldet.',
  'account.title': 'Mein Konto', 'account.balance': 'Guthaben', 'account.ledger': 'Letzte Guthabenänderungen', 'account.date': 'Datum',
  'account.change': 'Änderung', 'account.reason': 'Grund', 'account.after': 'Guthaben danach', 'account.orders': 'Meine Bestellungen',
  'account.noOrders': 'Noch keine Bestellungen.', 'account.chat': 'Chat-Konto', 'account.chatLinked': 'Verknüpft: {id}',
  'account.chatNone': 'Kein Chat-Konto verknüpft.', 'account.twoFactor': 'Zwei-Faktor-Anmeldung', 'account.on': 'An', 'account.off': 'Aus',
  'account.tickets': 'Support-Tickets', 'account.noLedger': 'Noch keine Guthabenänderungen.',
  'order.title': 'Bestellung #{id}', 'order.number': 'Bestellung', 'order.date': 'Datum', 'order.total': 'Summe', 'order.status': 'Lieferung',
  'order.items': 'Das hast du gekauft', 'order.view': 'Bestellung #{id}',
  'order.status.waiting': 'Bezahlt – wartet auf den Spielserver', 'order.status.delivered': 'Geliefert an {servers}',
  'order.status.failed': 'Lieferung fehlgeschlagen – bitte den Support kontaktieren', 'order.status.refunded': 'Erstattet',
  'order.status.complete': 'Abgeschlossen',
  'order.live': 'Diese Anzeige aktualisiert sich von selbst.',
  'tickets.title': 'Support', 'tickets.open': 'Ticket eröffnen', 'tickets.category': 'Kategorie', 'tickets.subject': 'Betreff',
  'tickets.message': 'Nachricht', 'tickets.send': 'Ticket eröffnen', 'tickets.none': 'Du hast keine Tickets.',
  'tickets.created': 'Dein Ticket ist eröffnet; das Team antwortet hier.',
  'tickets.reply': 'Antworten', 'tickets.replySend': 'Antwort senden', 'tickets.close': 'Ticket schließen', 'tickets.closed': 'Das Ticket ist geschlossen.',
  'tickets.replied': 'Deine Antwort wurde gesendet.', 'tickets.you': 'Du', 'tickets.staff': 'Team', 'tickets.updated': 'Aktualisiert',
  'tickets.status.1': 'Offen', 'tickets.status.2': 'Beantwortet', 'tickets.status.3': 'Wartet auf das Team', 'tickets.status.4': 'Geschlossen',
  'tickets.statusLabel': 'Status', 'tickets.unavailable': 'Der Support ist nicht verfügbar.',
  'error.notFound': 'Nicht gefunden', 'error.notFoundText': 'Unter dieser Adresse gibt es nichts.',
  'error.csrf': 'Dieses Formular ist abgelaufen und wurde erneuert. Bitte versuche es noch einmal.',
  'error.server': 'Bei uns ist etwas schiefgegangen (Anfrage {id}). Es wurde nichts geändert.', 'error.title': 'Fehler',
  'error.rateLimited': 'Zu viele Versuche; versuche es in {after} noch einmal.', 'error.required': 'Bitte ausfüllen.',
  'error.controlCharacter': 'Zeilenumbrüche und andere Steuerzeichen sind nicht erlaubt.',
  'error.OUT_OF_STOCK': 'Ein Produkt in deinem Warenkorb ist ausverkauft oder nicht mehr in dieser Menge da.',
  'error.INSUFFICIENT_BALANCE': 'Dein Guthaben reicht für diesen Warenkorb nicht.',
  'error.REQUIRED_PRODUCT': 'Ein Produkt in deinem Warenkorb setzt den Kauf eines anderen voraus.',
  'error.REQUIRED_LINKED_ACCOUNT': 'Ein Produkt in deinem Warenkorb braucht ein verknüpftes Chat-Konto.',
  'error.DOWNGRADE_NOT_ALLOWED': 'Du hast bereits einen höheren Rang als einen in deinem Warenkorb.',
  'error.INVALID_VARIABLE': 'Prüfe die gewählten Optionen: {detail}',
  'error.PRODUCT_NOT_FOUND': 'Ein Produkt in deinem Warenkorb ist nicht mehr erhältlich.', 'error.INVALID_QUANTITY': 'Wähle eine Anzahl von 1 bis {max}.',
  'error.USERNAME_ALREADY_EXIST': 'Dieser Benutzername ist vergeben.', 'error.EMAIL_ALREADY_EXIST': 'Diese E-Mail nutzt schon ein anderes Konto.',
  'error.REGISTER_LIMIT': 'Von deiner Adresse dürfen keine weiteren Konten registriert werden.',
  'error.INVALID_USERNAME': 'Nutze 3 bis 16 Buchstaben, Ziffern oder _.',
  'error.INVALID_EMAIL': 'Diese E-Mail-Adresse ist ungültig.', 'error.INVALID_PASSWORD': 'Das Passwort muss {min} bis {max} Zeichen lang sein.',
  'error.TICKET_CLOSED': 'Dieses Ticket ist geschlossen.', 'error.tooLong': 'Höchstens {max} Zeichen.',
  'pay.title': 'Weiter zu {gateway}', 'pay.text': 'Du wirst zum Bezahlen zu {gateway} weitergeleitet. Falls nichts passiert, nutze die Schaltfläche.',
  'pay.continue': 'Weiter zu {gateway}',
  'payment.title': 'Deine Zahlung', 'payment.status.pending': 'Wir warten auf deine Zahlung von {amount}.',
  'payment.status.completed': 'Bezahlt: {amount}. Danke!',
  'payment.status.credited': 'Bezahlt, aber der Kauf war nicht mehr möglich: {amount} wurden deinem Guthaben gutgeschrieben.',
  'payment.status.refund-due': 'Bezahlt, aber der Kauf war nicht mehr möglich: {amount} werden erstattet.', 'payment.status.refunded': 'Erstattet: {amount}.',
  'payment.status.disputed': 'Diese Zahlung wird angefochten.', 'payment.status.expired': 'Nicht rechtzeitig bezahlt: diese Zahlung ist abgelaufen.',
  'payment.guestHint': 'Registriere ein Konto mit dem Namen {name}, um diese Bestellung bei deinen zu sehen.',
  'guest.name': 'Name im Spiel', 'guest.hint': 'Der Kauf wird an diesen Namen geliefert: 3 bis 16 Buchstaben, Ziffern oder _.',
  'basket.payDirect': 'Direkt bezahlen', 'basket.payWith': '{total} mit {gateway} bezahlen',
  'topup.title': 'Guthaben aufladen', 'topup.none': 'Zurzeit gibt es kein Aufladepaket.', 'topup.credits': '{credits} Guthaben',
  'topup.pay': '{name} mit {gateway}',
  'account.topUp': 'Guthaben aufladen',
  'error.INVALID_GUEST_NAME': 'Gib deinen Namen im Spiel ein: 3 bis 16 Buchstaben, Ziffern oder _.',
  'error.GUEST_CHECKOUT_DISABLED': 'Bitte melde dich an: dieser Shop nimmt keine Gastbestellungen an.',
  'error.GATEWAY_ERROR': 'Der Zahlungsanbieter antwortet nicht; versuche es gleich noch einmal.',
  'error.GATEWAY_UNAVAILABLE': 'Diese Zahlungsart ist nicht verfügbar.',
  'footer.currency': 'Preise in {currency}.',
  'codes.title': 'Gutschein und Geschenkkarte', 'codes.coupon': 'Gutscheincode', 'codes.giftCard': 'Geschenkkartencode', 'codes.apply': 'Einlösen',
  'codes.hint': 'Leere beide Felder, um sie zu entfernen. Sie gelten für jede Zahlungsart.', 'codes.applied': 'Deine Codes gelten für diesen Warenkorb.',
  'codes.removed': 'Für deinen Warenkorb gilt jetzt kein Code.', 'codes.couponLine': 'Gutschein {code}', 'codes.giftCardLine': 'Geschenkkarte {code}',
  'codes.tooMany': 'Zu viele falsche Codes: vorerst wird kein Code angenommen. Versuche es in {after} noch einmal.',
    'basket.toPay': 'Zu zahlen',
  'error.PROMOTION_INVALID': 'Dieser Code gilt nicht: {detail}', 'error.PROMOTION_USED_UP': 'Jemand war schneller: {detail}',
  'home.goal': 'Gemeinschaftsziel', 'home.goalText': '{raised} von {target} erreicht ({percent} %)',
};

export const LANGUAGES = { en: en as Catalogue, de } as const;
export type Language = keyof typeof LANGUAGES;

export type Translate = (key: MessageKey, values?: Record<string, string | number>) => string;

const translators = new Map<Language, Translate>();

/** The language's translate function (one per language, made once). */
export function translator(lang: Language): Translate {
  let made = translators.get(lang);
  if (!made) translators.set(lang, made = translate(LANGUAGES[lang]));
  return made;
}

function translate(catalogue: Catalogue): Translate {
  return (key, values) => {
    const text = catalogue[key];
    return values ? text.replace(/\{(\w+)\}/g, (m, name: string) => (Object.hasOwn(values, name) ? String(values[name]) : m)) : text;
  };
}

/** Headers seen and what they asked for (browsers send a handful of distinct ones). */
const PICKED = new Map<string, Language | undefined>();
const PICKED_MAX = 500;

/** The first language of an Accept-Language header we have (by its q weights), else `fallback`. */
export function pickLanguage(header: string | undefined, fallback: Language): Language {
  if (!header) return fallback;
  if (header.length > 200) return wantedLanguage(header) ?? fallback;
  if (!PICKED.has(header)) {
    if (PICKED.size >= PICKED_MAX) PICKED.clear();
    PICKED.set(header, wantedLanguage(header));
  }
  return PICKED.get(header) ?? fallback;
}

function wantedLanguage(header: string): Language | undefined {
  const wanted = header.split(',').slice(0, 20).map((part, i) => {
    const [tag = '', ...params] = part.trim().split(';');
    const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find(Boolean);
    return { lang: tag.trim().toLowerCase().split('-')[0]!, q: q === undefined ? 1 : Number(q), i };
  }).filter((w) => w.q > 0).sort((a, b) => b.q - a.q || a.i - b.i);
  return wanted.find((w) => Object.hasOwn(LANGUAGES, w.lang))?.lang as Language | undefined;
}
